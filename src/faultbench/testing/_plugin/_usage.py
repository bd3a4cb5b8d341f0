"""The plugin's side of usage and budgets: a run's figures on its report, the
`@pytest.mark.budget` check that fails a run over its budget with the figures, the group's
usage line and JUnit properties (`_gate/_usage.py` computes the figures)."""

from __future__ import annotations

from typing import Any

import pytest

from .._gate._paired import runs_for_margin
from .._gate._usage import Usage, check_budget, load_prices, over_budget, usage_line

__all__ = ["group_usage", "logging_model", "run_usage", "runs_needed"]

_PRICES = pytest.StashKey[dict[str, tuple[float, float]]]()


def _prices(item: pytest.Item, marker: Any) -> dict[str, tuple[float, float]]:
    given = marker.kwargs.get("prices") if marker is not None else None
    if given is not None:
        return load_prices(item.config.rootpath, given)
    config = item.config
    if _PRICES not in config.stash:
        config.stash[_PRICES] = load_prices(config.rootpath)
    return config.stash[_PRICES]


def logging_model(node: Any, world: Any, block: dict[str, Any] | None) -> dict[str, Any] | None:
    """The faults block of a run with a `budget` marker: with a `model:` rule (an empty one
    if it had none), so that `run_agent`'s model wrapper logs every model call and its
    usage. Others keep their block as it was."""
    if node.get_closest_marker("budget") is None:
        return block
    if block is None:  # the world file's own block
        from faultbench.kernel.lowlevel import render_faults

        block = dict(render_faults(world.fault_rules))
    return block if "model" in block else {**block, "model": {}}


def run_usage(item: pytest.Item, report: Any, world: Any, data: dict[str, Any]) -> None:
    """Put the run's usage on its report data; fail a run that passed but went over its
    `budget` marker, with the figures (a failure like any other: `min_pass_rate` may
    tolerate it)."""
    # the prices of the closest budget marker that gives them (per run or per group)
    marker = next((m for m in item.iter_markers("budget") if "prices" in m.kwargs), None)
    usage = Usage.of(list(world.events), _prices(item, marker))
    data["usage"] = {
        "model_calls": usage.model_calls,
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "tool_calls": usage.tool_calls,
        "virtual_seconds": usage.virtual_seconds,
        "cost_usd": usage.cost_usd,
        "priced_by": usage.priced_by,
    }
    budgets = _budgets(item)
    if "group" in budgets:
        data["group_budget"] = budgets["group"]
    if "run" not in budgets:
        return
    over = over_budget(usage, budgets["run"])
    if over and report.passed:
        text = "over budget: " + "; ".join(over)
        report.outcome = "failed"
        report.longrepr = text
        data["message"] = text


def _budgets(item: pytest.Item) -> dict[str, dict[str, float]]:
    """The test's `budget` markers by what they limit: `per="run"` (the default), each run;
    `per="group"`, the runs of the group together."""
    out: dict[str, dict[str, float]] = {}
    for marker in item.iter_markers("budget"):
        per = marker.kwargs.get("per", "run")
        limits = {k: v for k, v in marker.kwargs.items() if k not in ("prices", "per")}
        try:
            if per not in ("run", "group"):
                raise ValueError(f'per={per!r}: expected per="run" or per="group"')
            out.setdefault(per, check_budget(limits))  # the closest marker of each wins
        except ValueError as exc:
            raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.budget: {exc}") from None
    return out


def usage_of(runs: Any) -> list[Usage]:
    return [Usage(**r.usage) for r in runs if getattr(r, "usage", None)]


def group_usage(group: Any) -> tuple[str | None, list[tuple[str, object]]]:
    """The group's usage line for the summary and its JUnit properties."""
    usages = usage_of(group.runs.values())
    line = usage_line(usages, group.gate().passed)
    if line is None:
        return None, []
    costs = [u.cost_usd for u in usages]
    props: list[tuple[str, object]] = [
        ("faultbench_model_calls", sum(u.model_calls for u in usages)),
        ("faultbench_tokens", sum(u.tokens for u in usages)),
    ]
    if all(c is not None for c in costs):
        props.append(("faultbench_cost_usd", round(sum(c or 0.0 for c in costs), 6)))
    return line, props


def runs_needed(group: Any) -> str | None:
    """For a gate whose 95% interval still holds its threshold (the runs cannot tell the rate
    from it), the line saying how many runs would: those whose Wilson interval at the
    observed rate stops short of the threshold (`faultbench plan`)."""
    gate = group.gate()
    if gate.errors or not gate.ran or gate.min_pass_rate is None:
        return None
    lo, hi = gate.interval
    threshold, rate = gate.min_pass_rate, gate.rate
    margin = abs(rate - threshold)
    if not (lo < threshold < hi) or margin < 1e-9:
        return None
    n = runs_for_margin(rate, margin)
    if n <= gate.ran:
        return None
    return (
        f"the {gate.ran} runs cannot tell {rate:.1%} from min_pass_rate={threshold:g} with 95% "
        f"confidence; about {n} runs would (faultbench plan --rate {rate:.3g} "
        f"--margin {margin:.3g})"
    )
