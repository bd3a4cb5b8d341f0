"""Usage and cost of runs: model calls, tokens, tool calls and virtual time, read from a run's
event log, priced from a table the user sets; and the per-run budgets of `@pytest.mark.budget`.

The figures come from the log alone (`ModelCalled` / `ModelUsed` events, which a framework's
model wrapper writes from the framework's own usage objects; `CallStarted`; the clock), so a
saved log (`--faultbench-events`) gives the same figures as the live run. Prices are never
taken for truth: `DEFAULT_PRICES` is a dated example table, and `[tool.faultbench.prices]` in
pyproject.toml (or the marker's `prices=`) replaces it. A model the table does not price is
priced by genai-prices (pydantic's price database), and the usage line names its release.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "BUDGET_KEYS",
    "DEFAULT_PRICES",
    "PRICES_DATE",
    "Usage",
    "load_prices",
    "over_budget",
    "percentile",
    "usage_line",
]

#: the date the default prices were read from the providers' public price pages
PRICES_DATE = "2024-10-01"
#: USD per million tokens (input, output): an example, not a quote; set your own
DEFAULT_PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
}

BUDGET_KEYS = ("cost_usd", "tokens", "model_calls", "tool_calls", "virtual_seconds")


@dataclass(frozen=True)
class Usage:
    """What one run used."""

    model_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    tool_calls: int = 0
    virtual_seconds: float = 0.0
    #: None when a model the run used has no price
    cost_usd: float | None = 0.0
    #: where a price not in the table came from ("genai-prices 0.2.3"), None: the table's
    priced_by: str | None = None

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @classmethod
    def of(cls, events: Sequence[Any], prices: Mapping[str, tuple[float, float]]) -> Usage:
        from faultbench.kernel import CallStarted, ModelCalled, ModelUsed

        model_calls = tool_calls = tokens_in = tokens_out = 0
        cost: float | None = 0.0
        priced_by = None
        for ev in events:
            if isinstance(ev, ModelCalled):
                model_calls += 1
            elif isinstance(ev, CallStarted):
                tool_calls += 1
            elif isinstance(ev, ModelUsed):
                tokens_in += ev.input_tokens
                tokens_out += ev.output_tokens
                price = prices.get(ev.model)
                if price is not None and cost is not None:
                    cost += (ev.input_tokens * price[0] + ev.output_tokens * price[1]) / 1e6
                elif cost is not None and (ev.input_tokens or ev.output_tokens):
                    listed = market_price(ev.model, ev.input_tokens, ev.output_tokens)
                    if listed is None:
                        cost = None
                    else:
                        cost, priced_by = cost + listed[0], listed[1]
        seconds = (events[-1].at - events[0].at).total_seconds() if events else 0.0
        return cls(model_calls, tokens_in, tokens_out, tool_calls, seconds, cost, priced_by)

    @classmethod
    def total(cls, usages: Sequence[Usage]) -> Usage:
        """What runs used together (cost None if any run's is unknown)."""
        costs = [u.cost_usd for u in usages]
        return cls(
            sum(u.model_calls for u in usages),
            sum(u.input_tokens for u in usages),
            sum(u.output_tokens for u in usages),
            sum(u.tool_calls for u in usages),
            sum(u.virtual_seconds for u in usages),
            None if any(c is None for c in costs) else sum(c or 0.0 for c in costs),
            next((u.priced_by for u in usages if u.priced_by), None),
        )

    def figures(self) -> dict[str, float | int | None]:
        """The budgeted figures, by `BUDGET_KEYS` name."""
        return {
            "cost_usd": self.cost_usd,
            "tokens": self.tokens,
            "model_calls": self.model_calls,
            "tool_calls": self.tool_calls,
            "virtual_seconds": self.virtual_seconds,
        }


def market_price(model: str, tokens_in: int, tokens_out: int) -> tuple[float, str] | None:
    """The cost in USD of these tokens of `model` by genai-prices (pydantic's price
    database, imported only here), and which release priced it; None for a model it does not
    know. `openai:gpt-5-mini` names its provider."""
    try:
        from importlib.metadata import version

        from genai_prices import Usage as Tokens
        from genai_prices import calc_price
    except ImportError:  # pragma: no cover - a dependency, but priced without it all the same
        return None
    provider, _, name = model.rpartition(":")
    try:
        calc = calc_price(
            Tokens(input_tokens=tokens_in, output_tokens=tokens_out),
            model_ref=name,
            provider_id=provider or None,
        )
    except LookupError:
        return None
    return float(calc.total_price), f"genai-prices {version('genai-prices')}"


def load_prices(
    root: Path, marker: Mapping[str, Any] | None = None
) -> dict[str, tuple[float, float]]:
    """The price table: the marker's `prices=`, else `[tool.faultbench.prices]` of
    `root/pyproject.toml` (`model = {input = 0.15, output = 0.60}`, USD per million
    tokens), else `DEFAULT_PRICES`. Raises ValueError naming a malformed entry."""
    table: Mapping[str, Any] | None = marker
    if table is None:
        path = root / "pyproject.toml"
        if path.is_file():
            data = tomllib.loads(path.read_text())
            table = data.get("tool", {}).get("faultbench", {}).get("prices")
    if table is None:
        return dict(DEFAULT_PRICES)
    prices: dict[str, tuple[float, float]] = {}
    for model, entry in table.items():
        if isinstance(entry, Mapping) and set(entry) == {"input", "output"}:
            values = (entry["input"], entry["output"])
            if all(
                isinstance(v, int | float) and not isinstance(v, bool) and v >= 0 for v in values
            ):
                prices[model] = (float(values[0]), float(values[1]))
                continue
        raise ValueError(
            f"[tool.faultbench.prices] {model} = {entry!r}: expected "
            "{input = USD per million input tokens, output = USD per million output tokens}"
        )
    return prices


def over_budget(usage: Usage, budget: Mapping[str, float]) -> list[str]:
    """One line per figure over its budget: `tokens 5200 > budget 4000`."""
    out = []
    figures = usage.figures()
    for key, limit in budget.items():
        value = figures[key]
        if value is None:
            out.append(f"{key}: unknown (a model without a price) with a budget of {limit:g}")
        elif value > limit:
            out.append(f"{key} {_show(key, value)} > budget {_show(key, limit)}")
    return out


def check_budget(budget: Mapping[str, Any]) -> dict[str, float]:
    """The marker's keyword arguments, checked: raises ValueError for an unknown key or a
    value that is not a number >= 0."""
    out = {}
    for key, value in budget.items():
        if key not in BUDGET_KEYS:
            raise ValueError(f"unknown budget {key!r}; expected one of {', '.join(BUDGET_KEYS)}")
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise ValueError(f"budget {key}={value!r}: expected a number >= 0")
        out[key] = float(value)
    return out


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..1) of `values`, by the nearest-rank method."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def usage_line(usages: Sequence[Usage], passed: int) -> str | None:
    """The group's usage, for the summary: model calls and tokens per run (p50 / p90), cost
    per run and per passing run. None when no run called a model."""
    if not usages or not any(u.model_calls for u in usages):
        return None
    tokens = [u.tokens for u in usages]
    calls = sum(u.model_calls for u in usages) / len(usages)
    line = (
        f"usage: {calls:.3g} model calls/run, tokens p50 {percentile(tokens, 0.5):,} "
        f"p90 {percentile(tokens, 0.9):,}"
    )
    costs = [u.cost_usd for u in usages]
    if all(c is not None for c in costs):
        total = sum(c for c in costs if c is not None)
        line += f", cost/run ${total / len(usages):.4f}"
        line += f", cost per pass ${total / passed:.4f}" if passed else ", no pass"
        source = next((u.priced_by for u in usages if u.priced_by), None)
        if source is not None:
            line += f" (prices: {source}, where the price table has none)"
    else:
        line += ", cost unknown (a model without a price)"
    return line


def _show(key: str, value: float) -> str:
    if key == "cost_usd":
        return f"${value:.4f}"
    return f"{value:g}"
