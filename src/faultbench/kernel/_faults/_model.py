"""Model faults: what goes wrong between an agent and its model API, decided by the same plan.

A world's `faults:` block may hold a `model:` rule (`latency_ms`, `errors`, `script`,
`timeout_s`) next to its tool rules; it is stored under the key `"model"` as a `FaultRule`
whose kinds are the ones below, never a tool kind. The k-th call of the agent to its model is
decided from (seed, run, "model", k) with the plan's own draws (`FaultPlan.draws`), so a model
fault replays, shrinks and forks like a tool fault, and adding a tool call never changes what
happens to the 3rd model call. A framework's model wrapper (`faultbench.integrations`) asks
`World.model_call`-style helpers (`_world/_model.py`) for the decision and executes it.

The kinds are a registry of their own (they are not tool kinds: `stream_cut` on a tool means
nothing); their order is the order of the cumulative draw, so a new kind goes at the end.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

import msgspec

from ._kinds import Option
from ._plan import FaultPlan, _latency_s
from ._types import FaultRule

__all__ = [
    "MODEL_KEY",
    "MODEL_KINDS",
    "MODEL_KIND_NAMES",
    "ModelFault",
    "ModelKind",
    "decide_model",
    "model_kind",
]

#: the key of the model's rule in a `faults:` block (and in a world's rules)
MODEL_KEY = "model"


class ModelKind(msgspec.Struct, frozen=True, kw_only=True):
    """One model fault kind (docs/FAULTS.md, "Model faults")."""

    name: str
    #: the HTTP status a provider would answer, or None when the answer arrives but is wrong
    status: int | None = None
    #: options a rule may set (`retry_after_s`, `timeout_s`), as for tool kinds
    options: tuple[Option, ...] = ()
    #: what the model API says, the way providers word it; "" for a kind whose answer
    #: arrives (cut, malformed or empty) instead of an error
    text: str = ""
    #: how the HTML report draws a model call it happened to (`#rrggbb`): a tool kind's
    #: colour for a kind of the same name
    colour: str

    @property
    def fails(self) -> bool:
        """Does the agent's framework see an error (a status, or a timeout)?"""
        return bool(self.text)


_TIMEOUT = Option("timeout_s", 30.0, "after {}")
_RETRY_AFTER = Option("retry_after_s", 1.0, "retry after {}")

MODEL_KINDS: tuple[ModelKind, ...] = (
    ModelKind(name="http_429", status=429, options=(_RETRY_AFTER,), colour="#bcbd22",
              text="429 Too Many Requests: rate limit reached for the model; retry after {retry}"),
    ModelKind(name="http_500", status=500, colour="#9467bd",
              text="500 Internal Server Error: the model server failed"),
    ModelKind(name="http_503", status=503, colour="#e377c2",
              text="503 Service Unavailable: the model is overloaded; try again later"),
    ModelKind(name="timeout", options=(_TIMEOUT,), colour="#d62728",
              text="the model request timed out after {timeout}"),
    # The answer arrives, cut off: text halved, a tool call's arguments no longer JSON.
    ModelKind(name="stream_cut", colour="#393b79"),
    # The answer's first tool call has arguments that are not JSON, or lack a required field.
    ModelKind(name="malformed_tool_call", colour="#5254a3"),
    # The answer has nothing in it: no text, no tool call.
    ModelKind(name="empty_completion", colour="#6b6ecf"),
)  # fmt: skip

MODEL_KIND_NAMES: tuple[str, ...] = tuple(k.name for k in MODEL_KINDS)
_BY_NAME = {k.name: k for k in MODEL_KINDS}
_ORDER = {name: i for i, name in enumerate(MODEL_KIND_NAMES)}


def model_kind(name: str) -> ModelKind:
    """The model kind called `name`; KeyError for an unknown one."""
    return _BY_NAME[name]


class ModelFault(msgspec.Struct, frozen=True):
    """What the plan decided for the k-th model call. `kind is None`: latency only."""

    k: int
    kind: str | None = None
    latency_s: float = 0.0
    retry_after_s: float | None = None  # http_429
    timeout_s: float = 0.0  # timeout: virtual seconds the agent waited in vain
    #: malformed_tool_call: "invalid_json" or "missing_field", drawn with the call
    how: str | None = None
    source: str | None = None  # "script" or "random"

    @property
    def duration_s(self) -> float:
        """How far the call moves the virtual clock: latency, plus the wait of a timeout."""
        return self.latency_s + self.timeout_s

    @property
    def status(self) -> int | None:
        """The HTTP status the model API answers with (`ModelKind.status`), or None."""
        return None if self.kind is None else model_kind(self.kind).status

    @property
    def message(self) -> str:
        """What the provider's error says (empty for kinds whose answer arrives)."""
        if self.kind is None:
            return ""
        return model_kind(self.kind).text.format(
            retry=f"{self.retry_after_s or 0:g}s", timeout=f"{self.timeout_s:g}s"
        )

    def detail(self) -> dict[str, object]:
        """The parameters a `ModelCalled` event records: the source and the kind's options."""
        out: dict[str, object] = {"source": self.source}
        if self.kind is not None:
            for option in model_kind(self.kind).options:
                out[option.name] = getattr(self, option.name)
        if self.how is not None:
            out["how"] = self.how
        return out


class _Model:
    """The plan's target for model calls: only its `qualname` keys the draws."""

    qualname = MODEL_KEY


def model_rule(rules: Mapping[str, FaultRule]) -> FaultRule | None:
    return rules.get(MODEL_KEY)


def decide_model(plan: FaultPlan, k: int) -> ModelFault | None:
    """Decide the k-th (1-based) model call under `plan`: a script entry for k first, then the
    probabilistic errors in registry order. Both draws are always taken, so the latency of call
    k is the same whichever decides. None: nothing happens to the call."""
    rule = plan.rules.get(MODEL_KEY) if plan.enabled else None
    if rule is None:
        return None
    u_error, u_latency = plan.draws(_Model(), k)  # type: ignore[arg-type]  # only qualname is read
    latency_s = _latency_s(rule, u_latency)
    chosen, source = None, None
    for script_k, entry in rule.script:
        if script_k == k:
            chosen, source = entry, "script"
            break
    if chosen is None:
        cumulative = 0.0
        for entry in sorted(rule.errors, key=lambda e: _ORDER[e.kind]):
            cumulative += entry.p
            if u_error < cumulative:
                chosen, source = entry, "random"
                break
    if chosen is None:
        return ModelFault(k=k, latency_s=latency_s) if latency_s else None
    kind = chosen.kind
    timeout_s = 0.0
    if kind == "timeout":
        timeout_s = chosen.timeout_s or rule.timeout_s or float(_TIMEOUT.default or 0)
    retry = (
        (chosen.retry_after_s or float(_RETRY_AFTER.default or 0)) if kind == "http_429" else None
    )
    how = None
    if kind == "malformed_tool_call":
        how = "invalid_json" if _third_draw(plan, k) < 0.5 else "missing_field"
    return ModelFault(
        k=k, kind=kind, latency_s=latency_s, retry_after_s=retry, timeout_s=timeout_s,
        how=how, source=source,
    )  # fmt: skip


def _third_draw(plan: FaultPlan, k: int) -> float:
    """A draw of its own for the k-th model call (which way a tool call is malformed), from
    the same key as the plan's two, so it too depends on (seed, run, "model", k) only."""
    key = f"faultbench-model-v1\x1f{plan.seed}\x1f{plan.run}\x1f{MODEL_KEY}\x1f{k}".encode()
    digest = hashlib.blake2b(key, digest_size=8).digest()
    return (int.from_bytes(digest, "big") >> 11) / (1 << 53)
