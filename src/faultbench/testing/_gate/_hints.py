"""What a failing run's message says about its cause beyond the agent: a run the agent
framework ended because its own retry or turn budget ran out is named as such, with the
framework's setting, so a careful agent that met a burst of faults is not read as a careless
one."""

from __future__ import annotations

import re

__all__ = ["budget_hint"]

#: (pattern in the failure message, what to say; `{n}` is the budget the message names)
_BUDGETS = (
    (
        re.compile(r"exceeded max retries count of (\d+)"),
        "the framework ended this run: Pydantic AI's retry budget for a tool "
        "(Agent(retries={n})) was spent. If the agent was right to keep trying, raise it: "
        "run_agent(..., retries=3)",
    ),
    (
        re.compile(r"Max turns \((\d+)\) exceeded"),
        "the framework ended this run: the Agents SDK's turn budget (max_turns={n}) was spent; "
        "raise it with run_agent(..., max_turns=...)",
    ),
    (
        re.compile(r"Recursion limit of (\d+) reached"),
        "the framework ended this run: LangGraph's step budget (recursion_limit={n}) was "
        "spent; raise it with run_agent(..., recursion_limit=...)",
    ),
)


def budget_hint(message: str | None) -> str | None:
    """The line that names the framework's budget a run ended on (None: it did not)."""
    if not message:
        return None
    for pattern, text in _BUDGETS:
        found = pattern.search(message)
        if found is not None:
            return text.format(n=found.group(1))
    return None
