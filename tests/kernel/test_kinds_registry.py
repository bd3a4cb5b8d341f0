"""The fault-kind registries serve the shells: every kind carries what REST, the frameworks'
model wrappers and the HTML report need (an HTTP status and headers, a model API's status, a
colour), the shells read them there, and no shell keeps a kind-to-status table of its own."""

from __future__ import annotations

import re
import string
from pathlib import Path

import pytest

from faultbench.kernel import CallResult
from faultbench.kernel.lowlevel import (
    FAULT_KINDS,
    MODEL_KINDS,
    fault_headers,
    fault_kind,
    http_status,
    model_kind,
)

SRC = Path(__file__).parents[2] / "src" / "faultbench"
COLOUR = re.compile(r"#[0-9a-f]{6}")
#: a header's name (RFC 9110 token)
TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")


@pytest.mark.parametrize("k", FAULT_KINDS, ids=lambda k: k.name)
def test_every_fault_kind_has_what_the_shells_need(k):
    # a failed call is a 4xx or 5xx; a kind whose answer is a success (however wrong) is 200
    assert (k.status >= 400) == k.fails, (k.name, k.status)
    assert 200 <= k.status <= 599
    if not k.fails:
        assert k.status == 200
    assert COLOUR.fullmatch(k.colour), k.colour
    options = {o.name for o in k.options}
    for name, template in k.headers:
        assert TOKEN.fullmatch(name), name
        fields = {f for _, f, _, _ in string.Formatter().parse(template) if f}
        assert fields <= options, (k.name, name, fields - options)
    assert http_status(k.name) == k.status


@pytest.mark.parametrize("k", MODEL_KINDS, ids=lambda k: k.name)
def test_every_model_kind_has_what_the_shells_need(k):
    assert COLOUR.fullmatch(k.colour), k.colour
    # an error the framework sees has a status, or is the timeout (no answer at all)
    assert k.fails == bool(k.status is not None or k.name == "timeout"), k.name
    if k.status is not None:
        assert k.text.startswith(str(k.status)), k.text
    # one kind name, one colour in the report (its legend is keyed by name)
    tool = next((t for t in FAULT_KINDS if t.name == k.name), None)
    if tool is not None:
        assert tool.colour == k.colour, k.name


def test_failing_messages_start_with_their_status():
    class Target:
        qualname = "crm.get_customer"
        record = None

    class Decision:
        timeout_s = 30.0
        retry_after_s = 2.0

    for k in FAULT_KINDS:
        if k.message is None or k.name in ("rate_limit", "not_found"):
            continue  # rate_limit reads its rule's window; not_found words a missing record
        assert k.message(Decision(), Target(), None, None).startswith(str(k.status)), k.name  # type: ignore[arg-type]


def test_headers_are_filled_from_the_decision():
    assert fault_headers("http_429", {"retry_after_s": 2.5}) == {"Retry-After": "3"}
    assert fault_headers("http_429", {}) == {"Retry-After": "1"}  # the option's default
    assert fault_headers("rate_limit", {"retry_after_s": None}) == {}  # nothing to say
    assert fault_headers("rate_limit", {"retry_after_s": 10.0}) == {"Retry-After": "10"}
    assert fault_headers("token_expired", {})["WWW-Authenticate"].startswith("Bearer error=")
    assert fault_headers("http_500", {}) == {}
    assert fault_headers("no_such_kind", {}) == {}


def test_errors_that_are_not_faults_have_a_status():
    assert http_status("invalid_arguments") == 400
    assert http_status("unknown_tool") == 404
    assert http_status("unauthorized") == 401
    assert http_status("insufficient_scope") == 403
    assert http_status("idempotency_conflict") == 409
    assert http_status("journal_error") == 503
    assert http_status("something_new") == 500
    assert http_status(None) == 500


def test_the_shells_read_the_registry():
    from faultbench.integrations._modelfaults import ERROR_KINDS
    from faultbench.serve._rest import status_of
    from faultbench.testing._artifacts._html import KIND_COLOURS

    for k in FAULT_KINDS:
        assert KIND_COLOURS[k.name] == k.colour
        failed = CallResult("c1", "t", {}, ok=False, text="", error_kind=k.name, fault=k.name)
        if k.fails:
            assert status_of(failed) == k.status
    for m in MODEL_KINDS:
        assert KIND_COLOURS[m.name] == m.colour
    assert {m.name for m in MODEL_KINDS if m.fails} == ERROR_KINDS
    assert model_kind("http_429").status == 429
    assert fault_kind("revoked").status == 401


#: a dict entry mapping a quoted name to an HTTP status: `"http_429": 429`
STATUS_ENTRY = re.compile(r'"([a-z][a-z0-9_]*)"\s*:\s*([1-5]\d\d)\b')


def test_no_kind_to_status_table_outside_the_kernel():
    kinds = {k.name for k in FAULT_KINDS} | {m.name for m in MODEL_KINDS}
    kinds |= {"invalid_arguments", "unknown_tool", "unauthorized", "insufficient_scope"}
    found = []
    for path in sorted(SRC.rglob("*.py")):
        if "kernel" in path.relative_to(SRC).parts:
            continue
        for n, line in enumerate(path.read_text("utf-8").splitlines(), 1):
            found += [f"{path.relative_to(SRC)}:{n}: {line.strip()}"
                      for m in STATUS_ENTRY.finditer(line) if m[1] in kinds]  # fmt: skip
    assert found == []
