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
    "CallSucceeded",
    "CallFailed",
    # errors
    "FaultbenchError",
    "WorldFileError",
    "ToolCallError",
    "InvalidArguments",
    "UnknownTool",
    "RecordNotFound",
    "HandlerError",
    "HandlerCrashed",
    "InjectedFault",
    "ReplayError",
    "ReentrantApplyError",
}


def test_kernel_all_lists_the_design_names_and_each_resolves():
    names = set(faultbench.kernel.__all__)
    assert names >= DESIGN_NAMES
    assert len(names) == len(faultbench.kernel.__all__)
    for name in names:
        assert getattr(faultbench.kernel, name) is not None
    assert all(not n.startswith("_") for n in names)


def test_package_reexports_the_kernel():
    assert set(faultbench.__all__) == set(faultbench.kernel.__all__) | {"__version__"}
    for name in faultbench.kernel.__all__:
        assert getattr(faultbench, name) is getattr(faultbench.kernel, name)


def test_the_kernel_names_are_the_real_objects():
    from faultbench.kernel._replay import replay
    from faultbench.kernel._world import World, load_world

    assert faultbench.World is World
    assert faultbench.load_world is load_world
    assert faultbench.replay is replay
