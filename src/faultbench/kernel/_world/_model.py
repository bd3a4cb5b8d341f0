"""A world's side of its agent's model calls: decide each one's fault, log it, move the clock.

A framework's model wrapper (`faultbench.integrations`) calls `World.model_call` before it
asks the model, and executes what comes back (raise the provider's error, cut the answer...);
after the answer it reports the usage with `World.model_used`. Both are events, so the model
side of a run is in the log with the tool side: `replay` folds them, shrinking pins them
(`_inspect/_pins.py`), the trace and the HTML report show them.
"""

from __future__ import annotations

from datetime import timedelta

from .._faults import MODEL_KEY, FaultPlan, ModelFault, decide_model
from .._store import Book, ClockAdvanced, Draft, ModelCalled, ModelUsed

__all__ = ["log_model_call", "log_model_usage"]


def log_model_call(book: Book, plan: FaultPlan, model: str = "") -> ModelFault:
    """Decide the next model call under `plan` and log it (`ModelCalled`, then the clock
    moved by its latency and timeout). Always logged, faults or none, so that model calls are
    counted the same way in every run. A `model` that is not a string is a `TypeError`
    (it is logged, and a log must decode)."""
    if not isinstance(model, str):
        raise TypeError(
            f"model_call(model) takes the model's name as a string; got {type(model).__name__} "
            f"{model!r:.60}"
        )
    with book.lock:
        d = Draft(book.state)
        k = d.state.model_calls + 1
        fault = decide_model(plan, k) or ModelFault(k=k)
        s = d.state
        detail = fault.detail() if fault.kind is not None or fault.latency_s else {}
        if fault.latency_s:
            detail["latency_s"] = fault.latency_s
        d.emit(ModelCalled(seq=s.seq, at=s.clock, k=k, kind=fault.kind, model=model, detail=detail))
        if fault.duration_s > 0:
            s = d.state
            to = s.clock + timedelta(seconds=fault.duration_s)
            d.emit(ClockAdvanced(seq=s.seq, at=s.clock, to=to, call_id=f"{MODEL_KEY}#{k}"))
        book.commit(d)
    return fault


def log_model_usage(
    book: Book, k: int, input_tokens: int, output_tokens: int, model: str = ""
) -> None:
    """Log what the k-th model call used (`ModelUsed`)."""
    with book.lock:
        s = book.state
        book.emit(
            ModelUsed(
                seq=s.seq, at=s.clock, k=k, input_tokens=int(input_tokens),
                output_tokens=int(output_tokens), model=model,
            )
        )  # fmt: skip
