"""faultbench's MCP shell: a world's operations as MCP tools, in-process, over stdio or
streamable HTTP (`faultbench serve`). All of it but `WorldCalls` imports mcp; `import
faultbench` imports none of it.

`build_server`, `WorldServer` and `serve_in_thread` are what tests and integrations use; the
rest is what `faultbench serve` (faultbench.commands) is built from: the stdio and HTTP loops,
the loopback socket, the per-session event journals and the MCP form of a tool.
`MCP_VERSION` is the installed MCP SDK's (1.x or 2.x, both served: `_sdk.py`);
`connect_in_process` opens that SDK's own client on a server in this process, `connect_client`
on one elsewhere (a stdio command or an HTTP URL: `faultbench import mcp`); `to_wire` gives
an SDK model in wire form. `WorldCalls` is a world's tools and the handler of their calls
without MCP (no SDK import): `WorldServer` is one, and `WorldCalls(world).call_direct` or
`WorldServer.call_direct` answers a call in this process without a session (the
integrations' direct path); `call_result` makes the SDK's `CallToolResult` of
its answer as the SDK's in-process client (which speaks `IN_PROCESS_PROTOCOL`) would.

Every name is imported on first use (PEP 562): `from faultbench.serve import build_server`
imports the SDK's server and not the HTTP app (Starlette routes, Hypercorn), the stdio loop
(trio) or the thread server.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from faultbench._lazy import lazy_names as _lazy_names

if TYPE_CHECKING:
    from ._calls import WebhookUrlError as WebhookUrlError
    from ._calls import WorldCalls as WorldCalls
    from ._guard import is_loopback as is_loopback
    from ._http import ListenError as ListenError
    from ._http import build_app as build_app
    from ._http import listen_socket as listen_socket
    from ._http import serve_http as serve_http
    from ._journal import JournalError as JournalError
    from ._journal import Journals as Journals
    from ._journal import StateFile as StateFile
    from ._journal import StateFileError as StateFileError
    from ._sdk import IN_PROCESS_PROTOCOL as IN_PROCESS_PROTOCOL
    from ._sdk import MCP_VERSION as MCP_VERSION
    from ._sdk import call_result as call_result
    from ._sdk import connect as connect_client
    from ._sdk import connect_in_process as connect_in_process
    from ._sdk import dump as to_wire
    from ._server import WorldServer as WorldServer
    from ._server import build_server as build_server
    from ._server import mcp_tool as mcp_tool
    from ._stdio import serve_stdio as serve_stdio
    from ._thread import ServedUrl as ServedUrl
    from ._thread import serve_in_thread as serve_in_thread

#: public name -> the module it lives in ("module:name" where it has another name there)
_LAZY = {
    "IN_PROCESS_PROTOCOL": "._sdk",
    "MCP_VERSION": "._sdk",
    "JournalError": "._journal",
    "Journals": "._journal",
    "StateFile": "._journal",
    "StateFileError": "._journal",
    "ListenError": "._http",
    "ServedUrl": "._thread",
    "WebhookUrlError": "._calls",
    "WorldCalls": "._calls",
    "WorldServer": "._server",
    "build_app": "._http",
    "build_server": "._server",
    "call_result": "._sdk",
    "connect_client": "._sdk:connect",
    "connect_in_process": "._sdk",
    "is_loopback": "._guard",
    "listen_socket": "._http",
    "mcp_tool": "._server",
    "serve_http": "._http",
    "serve_in_thread": "._thread",
    "serve_stdio": "._stdio",
    "to_wire": "._sdk:dump",
}

__getattr__, __dir__ = _lazy_names(__name__, globals(), _LAZY)

__all__ = [
    "IN_PROCESS_PROTOCOL",
    "MCP_VERSION",
    "JournalError",
    "Journals",
    "ListenError",
    "ServedUrl",
    "StateFile",
    "StateFileError",
    "WebhookUrlError",
    "WorldCalls",
    "WorldServer",
    "build_app",
    "build_server",
    "call_result",
    "connect_client",
    "connect_in_process",
    "is_loopback",
    "listen_socket",
    "mcp_tool",
    "serve_http",
    "serve_in_thread",
    "serve_stdio",
    "to_wire",
]
