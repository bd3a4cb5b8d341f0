"""A world served over streamable HTTP from a background thread, for code that does not
serve it from an event loop of its own (the pytest plugin's `mcp_url` fixture, an async test,
a script driving an agent written in another language).

The server runs `serve_http` in its own thread with its own trio loop, whatever loop the
caller runs (none, asyncio's, trio's), and serves the world object it was given: calls made
over HTTP land in that world, so the caller reads their effects on it directly once a call
has been answered (a call's events are committed before its answer is sent). Do not call the
world from the caller's thread while HTTP calls are in flight: a world is not thread-safe.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from faultbench.kernel import World

    from ._server import WorldServer

__all__ = ["ServedUrl", "serve_in_thread"]


class ServedUrl(str):
    """An MCP server's URL with the HTTP headers its clients are to send: `run_agent(mcp=
    ServedUrl(url, headers={"Authorization": "Bearer ..."}))` connects with them, under every
    framework. The plugin's `mcp_url` is one (with the marked principal's bearer token in a
    world with `auth:`); a plain `str` URL sends no headers of its own."""

    headers: dict[str, str]

    def __new__(cls, url: str, headers: dict[str, str] | None = None) -> ServedUrl:
        served = super().__new__(cls, url)
        served.headers = dict(headers or {})
        return served


#: how long to wait for the server to listen, and for it to stop
_START_S = 30.0
_STOP_S = 10.0


@contextmanager
def serve_in_thread(
    world: World | WorldServer,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    token: str | None = None,
    rest: bool = False,
) -> Iterator[str]:
    """Serve `world` (a World, or a WorldServer from `build_server`) over streamable HTTP in a
    background thread; yields the MCP URL (`http://127.0.0.1:PORT/mcp`, a free port by
    default) and stops the server, draining open requests, on exit. With `rest`, the world's
    operations also answer their `http:` paths there (`faultbench serve --rest`).

    >>> with serve_in_thread(world) as url:  # doctest: +SKIP
    ...     run_my_agent(url)
    """
    import trio

    from ._http import build_app, check_exposure, listen_socket, serve_http
    from ._server import WorldServer, build_server

    server = world if isinstance(world, WorldServer) else build_server(world)
    check_exposure(host, token)  # before anything binds
    sock = listen_socket(host, port)  # a port in use fails here, in the caller's thread
    started = threading.Event()
    box: dict[str, Any] = {}

    async def main() -> None:
        # The app is made in the thread that serves it: the anyio primitives the SDK's app
        # makes belong to the event loop running when they are made, and a caller inside an
        # asyncio loop (an async test) would hand trio an app bound to asyncio.
        try:
            app = build_app(server, host=host, token=token, rest=rest)
        except BaseException as exc:  # raised as it is in the caller's thread
            box["refused"] = exc
            return
        stop = trio.Event()
        box["stop"] = stop
        box["token"] = trio.lowlevel.current_trio_token()
        async with trio.open_nursery() as nursery:
            box["url"] = await nursery.start(
                partial(serve_http, app, host=host, sock=sock, shutdown=stop.wait)
            )
            started.set()

    def run() -> None:
        try:
            trio.run(main)
        except BaseException as exc:  # reported in the caller's thread
            box["error"] = exc
        finally:
            started.set()

    thread = threading.Thread(target=run, name="faultbench-http", daemon=True)
    thread.start()
    if not started.wait(_START_S) or "url" not in box:
        sock.close()
        if "refused" in box:
            thread.join(_STOP_S)
            raise box["refused"]
        error = box.get("error")
        raise RuntimeError(f"the HTTP server for {server.world.name!r} did not start") from error
    try:
        yield box["url"]
    finally:
        try:  # from any thread, a trio thread of the caller's own included
            box["token"].run_sync_soon(box["stop"].set)
        except trio.RunFinishedError:
            pass  # the server already stopped (its error is raised below)
        thread.join(_STOP_S)
        if thread.is_alive():
            raise RuntimeError(f"the HTTP server for {server.world.name!r} did not stop")
        if "error" in box:
            raise RuntimeError(f"the HTTP server for {server.world.name!r} failed") from box[
                "error"
            ]
