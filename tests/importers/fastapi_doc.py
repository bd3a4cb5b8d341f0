"""A document in the shape FastAPI generates (written here, no FastAPI needed): schemas named
for their role (`WidgetResponse`, `WidgetBody`, `WidgetPatchBody`,
`WidgetCollectionResponse`), a natural key in the path (`/widgets/{widget_name}`), a
collection envelope with a total, `*_pattern` filters in SQL LIKE, `limit >= 0` without a
maximum, and 422 `HTTPValidationError` for every refusal of arguments."""

from __future__ import annotations

from typing import Any

_ERR = {"$ref": "#/components/schemas/HTTPExceptionResponse"}


def _json(ref: str, status: str = "200", **more: Any) -> dict[str, Any]:
    answer = {"description": "ok", "content": {"application/json": {"schema": {"$ref": ref}}}}
    return {
        status: answer,
        "404": {"description": "nf", "content": {"application/json": {"schema": _ERR}}},
        "422": {"description": "Validation Error", "content": {"application/json": {"schema": {
            "$ref": "#/components/schemas/HTTPValidationError"}}}},
        **more,
    }  # fmt: skip


_KEY = {"name": "widget_name", "in": "path", "required": True, "schema": {"type": "string"}}
_BODY = "#/components/schemas/"

WIDGETS: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "Widget API", "version": "2"},
    "paths": {
        "/api/v2/widgets": {
            "get": {
                "operationId": "get_widgets",
                "summary": "Get Widgets",
                "parameters": [
                    {
                        "name": "limit",
                        "in": "query",
                        "required": False,
                        "schema": {"type": "integer", "minimum": 0, "default": 50},
                    },
                    {
                        "name": "offset",
                        "in": "query",
                        "required": False,
                        "schema": {"type": "integer", "minimum": 0, "default": 0},
                    },
                    {
                        "name": "widget_name_pattern",
                        "in": "query",
                        "required": False,
                        "description": "SQL LIKE expression: use `%` / `_` wildcards.",
                        "schema": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                    },
                ],
                "responses": _json(_BODY + "WidgetCollectionResponse"),
            },
            "post": {
                "operationId": "post_widget",
                "summary": "Post Widget",
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": {"$ref": _BODY + "WidgetBody"}}},
                },
                "responses": _json(_BODY + "WidgetResponse", "201"),
            },
        },
        "/api/v2/widgets/{widget_name}": {
            "get": {
                "operationId": "get_widget",
                "parameters": [_KEY],
                "responses": _json(_BODY + "WidgetResponse"),
            },
            "patch": {
                "operationId": "patch_widget",
                "parameters": [_KEY],
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {"schema": {"$ref": _BODY + "WidgetPatchBody"}}
                    },
                },
                "responses": _json(_BODY + "WidgetResponse"),
            },
            "delete": {
                "operationId": "delete_widget",
                "parameters": [_KEY],
                "responses": {
                    "204": {"description": "gone"},
                    "404": {"description": "nf", "content": {"application/json": {"schema": _ERR}}},
                },
            },
        },
        "/api/v2/version": {
            "get": {
                "operationId": "get_version",
                "responses": {
                    "200": {
                        "description": "ok",
                        "content": {
                            "application/json": {"schema": {"$ref": _BODY + "VersionInfo"}}
                        },
                    }
                },
            }
        },
    },
    "components": {
        "schemas": {
            "WidgetResponse": {
                "type": "object",
                "title": "WidgetResponse",
                "required": ["name", "size", "description"],
                "properties": {
                    "name": {"type": "string", "title": "Name"},
                    "size": {"type": "integer", "minimum": -1, "title": "Size"},
                    "description": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                },
            },
            "WidgetBody": {
                "type": "object",
                "required": ["name", "size"],
                "additionalProperties": False,
                "properties": {
                    "name": {"type": "string", "maxLength": 256},
                    "size": {"type": "integer", "minimum": -1},
                    "description": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                },
            },
            "WidgetPatchBody": {
                "type": "object",
                "properties": {
                    "size": {"anyOf": [{"type": "integer", "minimum": -1}, {"type": "null"}]},
                    "description": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                },
            },
            "WidgetCollectionResponse": {
                "type": "object",
                "required": ["widgets", "total_entries"],
                "properties": {
                    "widgets": {"type": "array", "items": {"$ref": _BODY + "WidgetResponse"}},
                    "total_entries": {"type": "integer"},
                },
            },
            "VersionInfo": {
                "type": "object",
                "required": ["version"],
                "properties": {"version": {"type": "string"}},
            },
            "HTTPExceptionResponse": {
                "type": "object",
                "required": ["detail"],
                "properties": {"detail": {"anyOf": [{"type": "string"}, {"type": "object"}]}},
            },
            "HTTPValidationError": {
                "type": "object",
                "properties": {
                    "detail": {"type": "array", "items": {"$ref": _BODY + "ValidationError"}}
                },
            },
            "ValidationError": {
                "type": "object",
                "required": ["loc", "msg", "type"],
                "properties": {
                    "loc": {
                        "type": "array",
                        "items": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
                    },
                    "msg": {"type": "string"},
                    "type": {"type": "string"},
                },
            },
        }
    },
}
