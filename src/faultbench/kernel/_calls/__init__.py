"""Tool calls: operations as transactions, the call pipeline (faults, effects, results), batching of concurrent calls, and the event loops seen through their public APIs.

The stage's face: what the other stages (and the kernel's two doors) use from it, imported from
here and never from a module inside the stage (tests/test_layout.py checks it)."""

from ._auth import issue, token_expiry
from ._feed import Feed, FeedEvent
from ._later import pending_effects, schedule
from ._ops import CompiledOp, compile_ops, tables_to_dict
from ._pipeline import Pipeline, parse_rules
from ._results import CallResult, Tool
from ._surface import tool_now, tools_now

__all__ = [
    "CallResult",
    "CompiledOp",
    "Feed",
    "FeedEvent",
    "Pipeline",
    "Tool",
    "compile_ops",
    "issue",
    "parse_rules",
    "pending_effects",
    "schedule",
    "tables_to_dict",
    "token_expiry",
    "tool_now",
    "tools_now",
]
