"""The HTTP guard in front of every route family of `faultbench serve --http` (MCP at `/mcp`,
the control API under `/faultbench/`, the world's `--rest` paths): Host and Origin (DNS
rebinding, a cross-site form POST), header and body limits, redirects that stay on the
served origin. Issue 41's review, items 1 and 5, as the project's own tests."""

from __future__ import annotations

import re
import select
import socket
import time
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette
from starlette.responses import RedirectResponse
from starlette.routing import Route

from faultbench.kernel import World
from faultbench.kernel.lowlevel import load_spec
from faultbench.serve import serve_in_thread
from tests.serve.serve_helpers import ServeProcess

from .worlds import CRM

EVIL_HOST = {"host": "attacker.example"}
EVIL_ORIGIN = {"origin": "http://attacker.example"}
FORM = {"content-type": "application/x-www-form-urlencoded"}
MCP_POST = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
INIT = (
    b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
    b'"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}'
)

#: one request per route family: (method, path, headers, body)
FAMILIES = {
    "mcp": ("POST", "/mcp", MCP_POST, INIT),
    "control": (
        "POST",
        "/faultbench/clock",
        {"content-type": "application/json"},
        b'{"advance": 1}',
    ),
    "rest": ("POST", "/v1/customers", FORM, b"name=Mallory&email=m%40evil.example"),
}


def crm() -> World:
    return World.from_spec(load_spec("<crm>", text=CRM))


@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize(("evil", "status"), [(EVIL_HOST, 421), (EVIL_ORIGIN, 403)])
def test_every_route_family_refuses_a_foreign_host_or_origin(family, evil, status):
    world = crm()
    method, path, headers, body = FAMILIES[family]
    with serve_in_thread(world, rest=True) as url, httpx.Client() as http:
        base = url.removesuffix("/mcp")
        answer = http.request(method, base + path, headers={**headers, **evil}, content=body)
        assert answer.status_code == status, answer.text
        assert "attacker.example" in answer.text
        # the same request from this machine's own page is answered
        ours = http.request(method, base + path, headers=headers, content=body)
        assert ours.status_code < 400, ours.text
    events = [type(e).__name__ for e in world.events]
    assert events.count("RecordCreated") == 1 + (family == "rest")  # the seed row, ours


def test_a_cross_site_delete_over_rest_deletes_nothing():
    world = crm()
    with serve_in_thread(world, rest=True) as url, httpx.Client() as http:
        base = url.removesuffix("/mcp")
        for evil in (EVIL_HOST, EVIL_ORIGIN):
            refused = http.delete(base + "/v1/customers/1", headers=evil)
            assert refused.status_code in (403, 421)
            assert refused.json()["error"]["type"] in ("invalid_host", "invalid_origin")
    assert world.customers.get("1")["name"] == "Ada"


def test_a_redirect_never_leaves_the_origin_the_client_asked():
    # A wildcard bind checks no Host (the token guards it), so the Host is the attacker's: a
    # path the world does not serve (a trailing slash) is the document's JSON 404, with no
    # redirect built from that Host.
    world = crm()
    with serve_in_thread(world, rest=True, host="0.0.0.0", token="s3cret") as url:
        base = url.removesuffix("/mcp").replace("0.0.0.0", "127.0.0.1")
        headers = {"authorization": "Bearer s3cret", **EVIL_HOST}
        moved = httpx.get(base + "/v1/customers/?email=x", headers=headers)
    assert moved.status_code == 404
    assert "location" not in moved.headers
    assert moved.headers["content-type"].startswith("application/json")


@pytest.mark.anyio
async def test_the_guard_makes_any_absolute_location_relative():
    # imported here: the other tests of this file drive real servers through their routes
    from faultbench.serve._guard import HostPolicy, HttpGuard

    async def away(request):
        return RedirectResponse("http://evil.example//elsewhere?a=1")

    app = HttpGuard(Starlette(routes=[Route("/go", away)]), policy=HostPolicy.for_bind("::"))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://x") as c:
        answer = await c.get("/go")
    assert answer.headers["location"] == "/elsewhere?a=1"  # never `//evil.example`


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_too_many_headers_are_refused_with_431(family):
    method, path, headers, body = FAMILIES[family]
    many = {f"x-filler-{i}": "y" for i in range(150)}
    with serve_in_thread(crm(), rest=True) as url:
        base = url.removesuffix("/mcp")
        answer = httpx.request(method, base + path, headers={**headers, **many}, content=body)
    assert answer.status_code == 431
    assert "at most 100 request headers" in answer.text


@pytest.mark.parametrize(
    ("family", "limit"), [("mcp", 4 << 20), ("control", 1 << 20), ("rest", 4 << 20)]
)
def test_a_body_past_its_family_limit_is_refused_with_413_unread(family, limit):
    method, path, headers, _ = FAMILIES[family]
    with serve_in_thread(crm(), rest=True) as url:
        base = url.removesuffix("/mcp")
        # declared: refused on the headers, before a byte of the body is sent
        status, text = _declared(base + path, method, headers, limit + 1)
        assert status == 413, text
        # chunked (no length): refused once it goes past the limit
        _, status, text = _chunked(base + path, method, headers, limit * 4)
        assert status == 413, text


def _declared(url: str, method: str, headers: dict, length: int) -> tuple[int, str]:
    host, port, path = _where(url)
    with socket.create_connection((host, port), timeout=10) as sock:
        head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        head += "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        sock.sendall(f"{head}Content-Length: {length}\r\n\r\n".encode())
        return _status(_read_answer(sock))


def _chunked(url: str, method: str, headers: dict, total: int) -> tuple[int, int, str]:
    """Send up to `total` bytes chunked, stopping when the server answers; (sent, status,
    answer)."""
    host, port, path = _where(url)
    chunk = b"x" * (256 * 1024)
    with socket.create_connection((host, port), timeout=10) as sock:
        head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        head += "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        sock.sendall(f"{head}Transfer-Encoding: chunked\r\n\r\n".encode())
        sent = 0
        while sent < total:
            if select.select([sock], [], [], 0)[0]:
                break  # answered (or closed) before the body ended
            try:
                sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            except OSError:
                break
            sent += len(chunk)
        return (sent, *_status(_read_answer(sock)))


def _where(url: str) -> tuple[str, int, str]:
    found = re.match(r"http://([^:/]+):(\d+)(/.*)", url)
    assert found is not None
    return found.group(1), int(found.group(2)), found.group(3)


def _read_answer(sock: socket.socket) -> bytes:
    data = b""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and b"\r\n\r\n" not in data:
        try:
            more = sock.recv(65536)
        except OSError:
            break
        if not more:
            break
        data += more
    return data


def _status(data: bytes) -> tuple[int, str]:
    found = re.match(rb"HTTP/1\.1 (\d+)", data)
    return (int(found.group(1)) if found else 0), data.decode("latin-1")


def test_a_64_mib_body_gets_413_and_the_server_stays_small(tmp_path: Path):
    """The review's figure: a 64 MiB body over REST, declared and chunked, against a real
    `faultbench serve --rest` process; its peak RSS stays under 300 MB."""
    world = tmp_path / "crm.yaml"
    world.write_text(CRM)
    server = ServeProcess(str(world), "--http", "--port", "0", "--rest")
    try:
        url = server.base + "/v1/customers"
        assert _declared(url, "POST", FORM, 64 << 20)[0] == 413
        sent, status, _ = _chunked(url, "POST", FORM, 64 << 20)
        assert status == 413
        peak_kb = int(re.search(r"VmHWM:\s+(\d+) kB", _proc_status(server))[1])  # type: ignore[index]
        print(f"\nserver peak RSS {peak_kb / 1024:.0f} MB; chunked body sent {sent >> 20} MiB")
        assert peak_kb < 300 * 1024
        # and it keeps serving
        assert httpx.get(server.base + "/v1/customers").status_code == 200
    finally:
        server.stop()


def _proc_status(server: ServeProcess) -> str:
    return Path(f"/proc/{server.proc.pid}/status").read_text()
