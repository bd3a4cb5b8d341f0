"""faultbench's pytest plugin (entry point `pytest11: faultbench`).

A test marked `@pytest.mark.world("world.yaml")` (or `@pytest.mark.runs(n)`) becomes one item
per run, `test_x[run0]` ... `test_x[run{n-1}]`, parametrized last so the ids compose with the
test's own parameters (`test_x[case-a-run3]`). Each run gets a fresh world, `load_world(path,
seed, run=index)`; every report of a run carries `report.faultbench`, a plain dict (what the
run was, how it ended, its call line and event log), so the runs can be tallied wherever the
reports meet: in this process, or on pytest-xdist's controller. There the gate of each group
of runs is computed, failing runs are explained, and the exit status follows the gate.

This module gathers the hooks and fixtures, written by family under `_plugin/_hooks/`:
options, markers and run items (`_collection.py`), the fixtures (`_fixtures.py`), the
session's reports, gates and summary (`_session.py`), and what they keep on pytest's nodes
(`_stash.py`). pytest finds them here by name. It imports pytest and faultbench's kernel
only; `faultbench.serve` (hence mcp, trio) is imported inside the fixtures that serve a world
(docs/ARCHITECTURE.md, "Contracts").
"""

from __future__ import annotations

# Names this module held before its hooks moved to `_plugin/_hooks/`, still importable here.
from ._gate._checks import foreign_mark as foreign_mark
from ._gate._checks import gate_too_small as gate_too_small
from ._gate._report import Group, Tally, render_group
from ._gate._reproduce import launcher as launcher
from ._gate._reproduce import reproduce_command as reproduce_command
from ._gate._reproduce import shaping_options as shaping_options
from ._gate._runs import FILE_FAULTS, MARKERS, RUN_PARAM, Plan, RunInfo
from ._gate._runs import derive_seed as derive_seed
from ._gate._runs import group_of as group_of
from ._gate._runs import near_miss as near_miss
from ._gate._runs import registered_markers as registered_markers
from ._gate._runs import run_id as run_id
from ._gate._stats import decided as decided
from ._plugin._async import run_coroutine_test as run_coroutine_test
from ._plugin._async import trio_variants as trio_variants
from ._plugin._ci import faults_met as faults_met
from ._plugin._ci import github_annotation as github_annotation
from ._plugin._ci import group_properties as group_properties
from ._plugin._ci import send_gate_reports as send_gate_reports
from ._plugin._ci import step_summary as step_summary
from ._plugin._ci import write_json as write_json
from ._plugin._command import ServeCommand
from ._plugin._compare import ComparePlugin as ComparePlugin
from ._plugin._compare import compare_spec as compare_spec
from ._plugin._concurrent import ConcurrentRuns as ConcurrentRuns
from ._plugin._concurrent import add_concurrency_option as add_concurrency_option
from ._plugin._gc import RunLoopGC as RunLoopGC
from ._plugin._gc import add_gc_option as add_gc_option
from ._plugin._grading import grade_run as grade_run
from ._plugin._handles import Faults, LiveTrace
from ._plugin._harness import before_first_call as before_first_call
from ._plugin._harness import never_awaited as never_awaited
from ._plugin._harness import problem as problem
from ._plugin._harness import setup_problem as setup_problem
from ._plugin._hooks._collection import (
    pytest_addoption,
    pytest_collection_modifyitems,
    pytest_configure,
    pytest_generate_tests,
    pytest_make_collect_report,
    pytest_pyfunc_call,
    pytest_unconfigure,
)
from ._plugin._hooks._fixtures import (
    clock,
    faultbench_run,
    faults,
    mcp_command,
    mcp_server,
    mcp_url,
    trace,
    webhook_receiver,
    world,
)
from ._plugin._hooks._session import SESSION_KEY, FaultbenchSession
from ._plugin._hooks._stash import (
    AGENT_CALLS_KEY,
    COMMAND_KEY,
    FAULTS_OFF_KEY,
    FIXTURES,
    PLAN_KEY,
    RUN_KEY,
    SPECS_KEY,
    STOPPED_KEY,
    TOLERATED_KEY,
    WORLD_KEY,
)
from ._plugin._logs import Logs as Logs
from ._plugin._outputs import Outputs as Outputs
from ._plugin._outputs import add_output_options as add_output_options
from ._plugin._outputs import faults_override as faults_override
from ._plugin._usage import group_usage as group_usage
from ._plugin._usage import logging_model as logging_model
from ._plugin._usage import run_usage as run_usage
from ._plugin._usage import runs_needed as runs_needed

__all__ = [
    "AGENT_CALLS_KEY",
    "COMMAND_KEY",
    "FAULTS_OFF_KEY",
    "FILE_FAULTS",
    "FIXTURES",
    "MARKERS",
    "PLAN_KEY",
    "RUN_KEY",
    "RUN_PARAM",
    "SESSION_KEY",
    "SPECS_KEY",
    "STOPPED_KEY",
    "TOLERATED_KEY",
    "WORLD_KEY",
    "FaultbenchSession",
    "Faults",
    "Group",
    "LiveTrace",
    "Plan",
    "RunInfo",
    "ServeCommand",
    "Tally",
    "clock",
    "faultbench_run",
    "faults",
    "mcp_command",
    "mcp_server",
    "mcp_url",
    "pytest_addoption",
    "pytest_collection_modifyitems",
    "pytest_configure",
    "pytest_generate_tests",
    "pytest_make_collect_report",
    "pytest_pyfunc_call",
    "pytest_unconfigure",
    "render_group",
    "trace",
    "webhook_receiver",
    "world",
]
