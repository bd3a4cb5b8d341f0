"""faultbench's MCP shell: a world's operations as MCP tools, in-process, over stdio or
streamable HTTP (`faultbench serve`). Imports mcp; `import faultbench` does not import this."""

from ._sdk import MCP_VERSION as MCP_VERSION
from ._sdk import connect_in_process as connect_in_process
from ._server import WorldServer as WorldServer
from ._server import build_server as build_server
from ._thread import serve_in_thread as serve_in_thread

__all__ = ["MCP_VERSION", "WorldServer", "build_server", "connect_in_process", "serve_in_thread"]
