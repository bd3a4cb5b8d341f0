"""`faultbench check WORLD`: validate a world file and summarize it.

Exit 0 with a summary (services, records and their seed rows, tools and their arguments, the
faults that can happen to each tool, from the rule the fault plan draws from), or exit 2 with
every problem, one per line, each starting `path:line:col:`. No World, no server.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from faultbench.kernel import WorldSpec

HELP = "validate a world file and summarize its services, tools and faults"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("world", metavar="WORLD", help="the world file (YAML)")


def load_or_report(path: str) -> WorldSpec | None:
    """The WorldSpec of `path`, or None after printing why it cannot be loaded."""
    from faultbench.kernel import WorldFileError
    from faultbench.kernel.lowlevel import load_spec

    try:
        return load_spec(path)
    except WorldFileError as exc:
        for err in exc.errors:
            print(err, file=sys.stderr)
    except FileNotFoundError:
        print(f"{path}: no such file", file=sys.stderr)
    except IsADirectoryError:
        print(f"{path}: is a directory; expected a world file (YAML)", file=sys.stderr)
    except OSError as exc:
        print(f"{path}: cannot read: {exc.strerror or exc}", file=sys.stderr)
    return None


def run(args: argparse.Namespace) -> int:
    spec = load_or_report(args.world)
    if spec is None:
        return 2
    from faultbench.kernel.lowlevel import generate_rows

    rows = generate_rows(spec, spec.seed)
    sys.stdout.write("\n".join(summary(spec, rows, args.world)) + "\n")
    return 0


# ---------------------------------------------------------------------------------------------
# The summary
# ---------------------------------------------------------------------------------------------


def summary(spec: WorldSpec, rows: dict[str, list[dict[str, Any]]], path: str) -> Iterable[str]:
    from faultbench.kernel.lowlevel import effective_rule, operation_args

    total_rows = sum(len(r) for r in rows.values())
    yield f"world {spec.name} ({path})"
    if spec.description:
        yield f"  {spec.description}"
    yield f"  seed {spec.seed}, clock starts {_time(spec.clock_start)}"
    yield (
        f"  {_n(len(spec.services), 'service')}, {_n(len(spec.records), 'record')} "
        f"({_n(total_rows, 'seed row')}), {_n(len(spec.operations), 'tool')}, "
        f"{_n(len(spec.faults), 'fault rule')}"
    )
    if spec.auth is not None:
        yield ""
        yield (
            f"auth: {_n(len(spec.auth.principals), 'principal')}, tokens live "
            f"{_secs(spec.auth.token_ttl_s)} (tool refresh_token renews them)"
        )
        for name, scopes in spec.auth.principals.items():
            yield f"  principal {name}: {', '.join(scopes) or 'no scopes'}"
    for service in spec.services:
        yield ""
        about = f": {service.description}" if service.description else ""
        yield f"service {service.name}{about}"
        for name in service.records:
            record = spec.records[name]
            accessors = ", ".join(f"world.{a}" for a in dict.fromkeys((name, record.plural)))
            yield f"  record {name}: {_n(len(rows.get(name, ())), 'row')} ({accessors})"
            yield from _wrap([_field(f) for f in record.fields], "      ")
        for tool in service.operations:
            op = spec.operations[tool]
            args = ", ".join(
                f"{a.name}{'' if a.required else '?'}: {_arg_kind(a)}"
                for a in operation_args(op, spec.records)
            )
            target = f" {op.record}" if op.record else ""
            handler = f" -> {op.handler}" if op.handler else ""
            yield f"  tool {tool}({args})  [{op.kind}{target}{handler}]"
            if op.description:
                yield f"      {op.description}"
            if op.scopes:
                yield f"      needs scopes: {', '.join(op.scopes)}"
            if op.idempotency is not None:
                idem = op.idempotency
                yield (
                    f"      idempotent: key argument {idem.key}, remembered {_secs(idem.window_s)}"
                )
            yield from _later(op)
            if op.sort or op.page is not None or any(ops != ("eq",) for _, ops in op.where):
                yield f"      list: {_list_summary(op)}"
            # What the fault plan can actually do to this tool: kinds that cannot happen to
            # it left out, defaults (a timeout's 30s...) written out.
            yield f"      faults: {describe_rule(effective_rule(spec.faults, op))}"
    if spec.feeds:
        yield ""
        yield f"events ({_n(len(spec.feeds), 'type')}, listed by list_events)"
        for feed in spec.feeds.values():
            yield f"  {feed.type}: {feed.record} {', '.join(feed.on)}"
    hooks = spec.webhooks
    if hooks is not None:
        yield ""
        types = ", ".join(hooks.types) if hooks.types else "every type"
        yield (
            f"webhooks: {types} POSTed to {hooks.url or '(the url a test or --webhook-url gives)'}"
            f", signed; {hooks.retries} {'retry' if hooks.retries == 1 else 'retries'} from {_secs(hooks.backoff_s)} doubling, "
            f"timeout {_secs(hooks.timeout_s)}"
        )
        rule = spec.faults.get(f"{hooks.service}.webhooks")
        if rule is not None:
            yield f"  faults ({hooks.service}.webhooks): {describe_rule(rule)}"
    yield ""
    yield f"OK: {path} is a valid world"


def _later(op: Any) -> Iterable[str]:
    """An operation's `set:` and `then:`, e.g. `then: after 30s-5m, status=succeeded`."""
    if op.set:
        yield f"      sets: {_values(op.set)}"
    then = op.then
    if then is not None:
        lo, hi = then.after
        after = _secs(lo) if lo == hi else f"{_secs(lo)}-{_secs(hi)}"
        text = f"      then: after {after}, {_values(then.set)}"
        if then.branch is not None:
            text += f"; or {_num(then.branch.p * 100)}%: {_values(then.branch.set)}"
        yield text


def _values(values: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in values.items())


def describe_rule(rule: Any) -> str:
    """One line for an operation's effective fault rule (`_faults.effective_rule`), e.g.
    `latency 40-250 ms; timeout 10% (after 30s)`."""
    parts: list[str] = []
    lat = rule.latency
    if lat is not None:
        if lat.dist == "uniform":
            parts.append(f"latency {_num(lat.lo_ms)}-{_num(lat.hi_ms)} ms")
        elif lat.dist == "fixed":
            parts.append(f"latency {_num(lat.lo_ms)} ms")
        else:
            parts.append(f"latency p50 {_num(lat.p50_ms)} ms, p99 {_num(lat.p99_ms)} ms")
    for e in rule.errors:
        parts.append(f"{e.kind} {_num(e.p * 100)}%{_options(e)}")
    if rule.rate_limit is not None:
        rl = rule.rate_limit
        parts.append(f"rate limit {rl.calls} calls per {_secs(rl.per_seconds)}")
    if rule.not_found_if_newer_than_s is not None:
        parts.append(f"not_found if newer than {_secs(rule.not_found_if_newer_than_s)}")
    if rule.script:
        steps = ", ".join(f"call {k} {e.kind}{_options(e)}" for k, e in rule.script)
        parts.append(f"script: {steps}")
    return "; ".join(parts) if parts else "none"


def _options(e: Any) -> str:
    """An error's `commit:` and its kind's options, as the registry phrases them."""
    from faultbench.kernel.lowlevel import fault_kind

    notes = []
    if e.commit is not None:
        notes.append("commits" if e.commit else "no commit")
    for option in fault_kind(e.kind).options:
        value = getattr(e, option.name)
        if value is not None:
            shown = (
                value if option.whole
                else _clip(repr(value)) if option.text
                else _secs(value)
            )  # fmt: skip
            notes.append(option.shown.format(shown))
    return f" ({', '.join(notes)})" if notes else ""


def _field(f: Any) -> str:
    kind = f.written() if f.nested else (f.raw.strip() or f.kind)
    # `{type: str, optional: true}` (or a null default) is as optional as `str?`
    if f.optional and not kind.endswith("?"):
        kind += "?"
    text = f"{f.name}: {kind}"
    if f.has_default:
        text += f" = {_value(f.default)}"
    return text


def _value(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        return _time(value)
    return repr(value) if isinstance(value, str) else str(value)


def _list_summary(op: Any) -> str:
    """A list operation's filters, orders and pages in one line."""
    parts = [
        "filter " + ", ".join(f"{f} {'|'.join(ops)}" for f, ops in op.where) if op.where else "",
        f"sort {'|'.join(op.sort)} (default {op.sort[0]})" if op.sort else "id order",
    ]
    if op.page is not None:
        parts.append(f"{op.page.style} pages of {op.page.size} (at most {op.page.max_size})")
    return "; ".join(p for p in parts if p)


def _arg_kind(a: Any) -> str:
    if a.field is not None:  # a list or an object: its parts spelled out
        return str(a.field.written()).removesuffix("?")
    return _kind(a.kind, a.choices)


def _kind(kind: str, choices: tuple[str, ...]) -> str:
    """What the agent passes: enum values spelled out, a ref as the id text it is."""
    if kind == "enum" and choices:
        return "|".join(choices)
    if kind == "ref":
        return "str"
    return kind


def _wrap(items: list[str], indent: str, width: int = 96) -> Iterable[str]:
    line = ""
    for item in items:
        piece = item if not line else f", {item}"
        if line and len(indent) + len(line) + len(piece) > width:
            yield indent + line + ","
            line = item
        else:
            line += piece
    if line:
        yield indent + line


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def _clip(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 2] + "…" + text[-1]


def _num(x: float) -> str:
    return f"{round(x, 3):g}"


def _secs(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{_num(seconds)}s"


def _time(dt: datetime) -> str:
    from faultbench.kernel.lowlevel import iso_time

    return iso_time(dt)
