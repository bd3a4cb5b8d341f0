"""World files made from what a team already has: an OpenAPI document (`import_openapi`)
or a live MCP server (`faultbench import mcp`).

This package sits beside the shells, above the kernel: it needs libraries the kernel may not
import (`referencing` to resolve `$ref`s; the MCP SDK to read a server's tools), all imported
on first use. Install them with `pip install 'faultbench[import]'`.
"""

from __future__ import annotations

from ._mcp import import_mcp
from ._openapi_import import ImportedWorld, ImportProblem, import_openapi

__all__ = ["ImportProblem", "ImportedWorld", "import_mcp", "import_openapi"]
