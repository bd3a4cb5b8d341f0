"""The public names of DESIGN.md, exported from `faultbench` and `faultbench.kernel`."""

from __future__ import annotations

import faultbench
import faultbench.kernel

DESIGN_NAMES = {
    "World",
    "load_world",
    "replay",
    "diff_events",
    "encode_events",
    "decode_events",
    "apply",
    "Snapshot",
    "CallResult",
    "Tool",
    "Trace",
    "StateDiff",
    "EventDiff",
    # events
    "Event",
    "WorldCreated",
    "WorldForked",
    "RecordCreated",
    "RecordUpdated",
    "RecordDeleted",
    "ClockAdvanced",
    "CallStarted",
    "FaultInjected",
    "FaultsChanged",
    "CallSucceeded",
    "CallFailed",
    # effects that happen later (issue 21)
    "EffectScheduled",
    "EffectFired",
    # errors
    "FaultbenchError",
    "FaultsDisabled",
    "WorldFileError",
    "ToolCallError",
    "InvalidArguments",
    "UnknownTool",
    "RecordNotFound",
    "HandlerError",
    "HandlerCrashed",
    "InjectedFault",
    "ReplayError",
}


#: Exported although DESIGN.md does not name them: the types of what the API hands out
#: (`world.orders` is a Table of Records, `world.events` an EventLog, `world.clock` a
#: VirtualClock, `world.spec` a WorldSpec, `apply` takes a State) and the errors it raises.
RETURNED_TYPES = {
    "Record",
    "Table",
    "EventLog",
    "VirtualClock",
    "WorldSpec",
    "State",
    "SourceError",
    "RecordError",
    "ClockOverflow",
    # the union `decode_events` returns
    "AnyEvent",
    # a line of an append-only log file (serve --events), never in a world's log
    "LogRewound",
    # what `trace.check(policy)` takes and `trace.grade` returns (docs/CHECKS.md)
    "Checks",
    "Policy",
    "Grade",
    "Violation",
    "ModelCalled",
    "ModelUsed",
    # one attempt to deliver a webhook (issue 21), which `World.webhook_attempted` returns
    "WebhookAttempted",
}


#: DESIGN.md names these too, in its simulation section: the current world, and how code
#: outside a World sets it.
CURRENT_WORLD = {"current_world", "using_world"}


#: `faultbench.kernel.lowlevel`: what the shells (serve, the CLI commands, the pytest plugin,
#: the simulation API, benchmarks) need beyond the user API, so that nothing outside the
#: kernel imports a `faultbench.kernel._*` module (an import-linter contract checks it): the
#: world file readers, seed rows and fault rules of a spec without a World, the fault
#: registry, a run's faults read back from its log, and the kernel's one way to write times,
#: values, ids and hints.
LOWLEVEL_NAMES = {
    "AgentCall",
    "note_agent_call",
    "recording_agent_calls",
    "FaultPin",
    "faults_received",
    "pin_block",
    "FAULT_KINDS",
    "SURFACE_KINDS",
    "FaultKind",
    "fault_kind",
    "load_spec",
    "parse_faults",
    "render_faults",
    "parse_duration",
    "generate_rows",
    "effective_rule",
    "operation_args",
    "iso_time",
    "show_repr",
    "to_utc",
    "token_expiry",
    "did_you_mean",
    "format_value",
    "format_event",
    "id_order",
    "add_log_line",
    # faults in the MCP protocol: what the serve shell enacts for a call
    "PROTOCOL_KINDS",
    "Enactment",
    "protocol_fault",
    # a serve --state server folds what the other servers of its world appended
    "absorb_events",
    "add_tools",
    "empty_spec",
    "InjectionPlan",
    "INJECTABLE_KINDS",
    "MODEL_KINDS",
    # a framework's model wrapper executes the plan's model faults
    "ModelFault",
    "ModelKind",
    # a fault_inject wrapper inside a world's tool charges the running call
    "running_call",
    "ToolCharges",
    # serve --events: the journal is the acknowledgement (a change it cannot write is undone)
    "watch_log",
    # serve --keep-events: a long session's log held as a window (the journal keeps it all)
    "keep_events",
    "Cut",
    # a world file or log a command is pointed at: regular files only, bounded
    "read_bounded",
    # a failing run against the closest passing one, in words (summary, report, `diff`)
    "explain_runs",
    "RunExplanation",
    # the OpenAPI importer names records as the reader will accept them (issue 22)
    "plural",
    "WORLD_ATTRIBUTES",
    # webhook delivery (issue 21): `faultbench.webhooks` sends what the kernel decided and
    # signed; a receiver checks the signature
    "WebhookDelivery",
    "WEBHOOK_SIGNATURE_HEADER",
    "WebhookSignatureError",
    "sign_webhook",
    "spec_for_log",
    "verify_webhook",
    "webhook_url_problem",
}


def test_kernel_all_lists_the_design_names_and_each_resolves():
    names = set(faultbench.kernel.__all__)
    # Exact: a new public name is a decision (DESIGN.md, RETURNED_TYPES or SHELL_NAMES), not
    # an accident.
    assert names == DESIGN_NAMES | RETURNED_TYPES | CURRENT_WORLD
    assert len(names) == len(faultbench.kernel.__all__)
    for name in names:
        assert getattr(faultbench.kernel, name) is not None
    assert all(not n.startswith("_") for n in names)


def test_package_reexports_the_kernel():
    assert set(faultbench.__all__) == set(faultbench.kernel.__all__) | {"__version__"}
    for name in faultbench.kernel.__all__:
        assert getattr(faultbench, name) is getattr(faultbench.kernel, name)


def test_the_kernel_names_are_the_real_objects():
    from faultbench.kernel._world._replay import replay
    from faultbench.kernel._world._world import World, load_world

    assert faultbench.World is World
    assert faultbench.load_world is load_world
    assert faultbench.replay is replay


def test_nothing_public_outside_all():
    import types

    for module in (faultbench, faultbench.kernel):
        public = {n for n in dir(module) if not n.startswith("_")}
        # subpackages (faultbench.kernel, .serve once imported) are attributes, not exports
        extra = {
            n
            for n in public - set(module.__all__)
            if not isinstance(getattr(module, n), types.ModuleType)
        }
        assert extra == set(), module.__name__


def test_lowlevel_lists_the_shell_names_and_each_resolves():
    import faultbench.kernel.lowlevel as lowlevel

    names = set(lowlevel.__all__)
    assert names == LOWLEVEL_NAMES
    assert len(names) == len(lowlevel.__all__)
    for name in names:
        assert getattr(lowlevel, name) is not None
    # the two doors never overlap: a name is either the user's or the shells'
    assert names.isdisjoint(faultbench.kernel.__all__)
    # (pytest's assertion rewriting adds `@py_*` names to modules of a plugin's distribution)
    public = {n for n in dir(lowlevel) if not n.startswith(("_", "@"))}
    assert public == names
