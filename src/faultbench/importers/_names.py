"""Names from an API document made into world-file names: snake_case identifiers, tool
names, record names that stay clear of `World`'s own attributes."""

from __future__ import annotations

import keyword
import re

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_NON_WORD = re.compile(r"[^A-Za-z0-9]+")
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def snake(text: str) -> str:
    """`PaymentIntent` -> `payment_intent`, `v1/charges` -> `v1_charges`; '' if no word."""
    words = _NON_WORD.sub(" ", _CAMEL.sub(" ", text)).split()
    return "_".join(w.lower() for w in words)


def identifier(text: str, fallback: str = "value") -> str:
    """`text` as a Python identifier (kept as it is when it already is one and no keyword)."""
    if IDENT.fullmatch(text) and not keyword.iskeyword(text) and not text.startswith("__"):
        return text
    name = snake(text) or fallback
    if name[0].isdigit():
        name = f"{fallback}_{name}"
    return f"{name}_" if keyword.iskeyword(name) else name


def record_name(schema_name: str, taken: set[str]) -> str:
    """A record name for a schema whose accessors (`world.<name>`, `world.<plural>`) are
    free: not `World`'s own, not another record's (`taken` holds those, and is updated)."""
    from faultbench.kernel.lowlevel import WORLD_ATTRIBUTES, plural

    name = identifier(snake(schema_name) or "record", "record").lstrip("_") or "record"
    while {name, plural(name)} & (taken | WORLD_ATTRIBUTES) or keyword.iskeyword(name):
        name = f"{name}_record"
    taken.update((name, plural(name)))
    return name


def tool_name(text: str) -> str:
    """1 to 64 of letters, digits, '_' and '-' (what the world-file reader accepts)."""
    return (snake(text) or "operation")[:64]


#: words generators put after a resource's name to say a schema's role (FastAPI's
#: `PoolResponse`, `PoolBody`, `PoolPatchBody`, `PoolCollectionResponse`; SQLModel's
#: `HeroCreate`, `HeroPublic`): every such schema is the one resource `pool`, `hero`
ROLE_WORDS = frozenset(
    {"response", "body", "create", "update", "patch", "collection", "list", "out", "in",
     "request", "read", "public", "input", "output"}
)  # fmt: skip


def resource_words(schema_name: str) -> list[str]:
    """The snake_case words of the resource a schema is about: its name without the role
    words at its end (`DAGRunCollectionResponse` -> [dag, run]); the name itself when it is
    nothing but role words (`Response`)."""
    words = snake(schema_name).split("_") if snake(schema_name) else []
    end = len(words)
    while end > 1 and words[end - 1] in ROLE_WORDS:
        end -= 1
    return words[:end]


def fastapi_tool(op_id: str, method: str, path: str) -> str:
    """FastAPI's generated operation id (`read_item_items__item_id__get`: the function's
    name, the path with every non-word character as `_`, the method) without its path and
    method (`read_item`); any other id as it is."""
    suffix = re.sub(r"\W", "_", path) + "_" + method
    if op_id.endswith(suffix) and len(op_id) > len(suffix):
        return op_id[: -len(suffix)]
    return op_id
