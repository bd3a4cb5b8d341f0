"""faultbench's MCP shell: a world's operations as MCP tools, in-process, over stdio or
streamable HTTP (`faultbench serve`). Imports mcp; `import faultbench` does not import this."""

from ._server import WorldServer as WorldServer
from ._server import build_server as build_server
from ._thread import serve_in_thread as serve_in_thread

__all__ = ["WorldServer", "build_server", "serve_in_thread"]
