"""What a world is made of: the parsed spec's types, field types and value coercion, tool schemas, handlers, tools defined in code, and seed rows generated from a spec (read by every stage above; the world-file reader is `_read`).

The stage's face: what the other stages (and the kernel's two doors) use from it, imported from
here and never from a module inside the stage (tests/test_layout.py checks it)."""

import typing as _typing

from faultbench._lazy import lazy_names as _lazy_names

from ._checks import CHECK_KEYS, Checks, Policy, RecordExpectation, _equal, as_checks, parse_checks
from ._code import add_tools, empty_spec, tool_fingerprints, tools_problem
from ._fieldtypes import TYPE_HELP, _coerce, _expected, _parse_type, _to_datetime
from ._handlers import HandlerProblem, handler_description, handler_params, resolve_handler
from ._lists import (
    OPERATORS,
    OPERATORS_FOR,
    PAGE_ARGS,
    RESERVED_ARGS,
    arg_name,
    is_rich,
    list_sorted_fields,
    sort_key,
)
from ._nested import NestedError, conform, from_json, has_datetime, merge, ref_targets
from ._schema import (
    INT_MAX,
    INT_MIN,
    Validator,
    default_description,
    describe_field,
    input_schema,
    operation_args,
)
from ._tooldoc import (
    ANNOTATION_KEYS,
    LIE,
    name_title,
    tool_annotations,
    tool_output_schema,
    tool_title,
    writes,
)
from ._types import (
    AUTH_SERVICE,
    DEFAULT_CLOCK_START,
    REFRESH_TOOL,
    WORLD_ATTRIBUTES,
    AuthSpec,
    BranchSpec,
    FeedSpec,
    FieldSpec,
    IdempotencySpec,
    OperationSpec,
    PageSpec,
    ParamSpec,
    RecordSpec,
    SeedPlan,
    ServiceSpec,
    ThenSpec,
    WebhookSpec,
    WorldSpec,
)

if _typing.TYPE_CHECKING:
    from ._rows import generate_rows, plan_ids

#: names imported on first use (PEP 562): their modules are not loaded by `import faultbench`
_LAZY = {
    "generate_rows": "._rows",
    "plan_ids": "._rows",
}

__getattr__, __dir__ = _lazy_names(__name__, globals(), _LAZY)

__all__ = [
    "ANNOTATION_KEYS",
    "AUTH_SERVICE",
    "CHECK_KEYS",
    "DEFAULT_CLOCK_START",
    "INT_MAX",
    "INT_MIN",
    "LIE",
    "OPERATORS",
    "OPERATORS_FOR",
    "PAGE_ARGS",
    "REFRESH_TOOL",
    "RESERVED_ARGS",
    "TYPE_HELP",
    "WORLD_ATTRIBUTES",
    "AuthSpec",
    "BranchSpec",
    "Checks",
    "FeedSpec",
    "FieldSpec",
    "HandlerProblem",
    "IdempotencySpec",
    "NestedError",
    "OperationSpec",
    "PageSpec",
    "ParamSpec",
    "Policy",
    "RecordExpectation",
    "RecordSpec",
    "SeedPlan",
    "ServiceSpec",
    "ThenSpec",
    "Validator",
    "WebhookSpec",
    "WorldSpec",
    "_coerce",
    "_equal",
    "_expected",
    "_parse_type",
    "_to_datetime",
    "add_tools",
    "arg_name",
    "as_checks",
    "conform",
    "default_description",
    "describe_field",
    "empty_spec",
    "from_json",
    "generate_rows",
    "handler_description",
    "handler_params",
    "has_datetime",
    "input_schema",
    "is_rich",
    "list_sorted_fields",
    "merge",
    "name_title",
    "operation_args",
    "parse_checks",
    "plan_ids",
    "ref_targets",
    "resolve_handler",
    "sort_key",
    "tool_annotations",
    "tool_fingerprints",
    "tool_output_schema",
    "tool_title",
    "tools_problem",
    "writes",
]
