"""Policies for tests/env that worker processes must be able to import."""

from __future__ import annotations

import os

from faultbench.integrations import Reply, ToolCall


def handler_bug(seen):
    """Lists the items; where that failed (half the runs), calls the handler with a bug."""
    if not seen:
        return ToolCall("list_items", {})
    if not seen[-1].ok and seen[-1].tool == "list_items":
        return ToolCall("explode", {})
    return Reply("done")


def crashing_policy(seen):
    raise RuntimeError("the model client broke")


def dies(seen):
    os._exit(3)
