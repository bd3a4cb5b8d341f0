"""The operations pass, for list operations: `filter:` with operators, `sort:` and `page:`.

`filter: [status]` (equality only, as before) and `filter: {status: [eq, in], amount: [gt,
lte]}` both read into `OperationSpec.where`; operators are checked against the field's type,
`sort:` entries against the record's fields, `page:` against its two styles, and the tool
arguments all of this makes (`_spec/_lists.py`) against each other and the record's fields.
"""

from __future__ import annotations

from typing import Any

from ..._spec import (
    OPERATORS,
    OPERATORS_FOR,
    PAGE_ARGS,
    RESERVED_ARGS,
    PageSpec,
    arg_name,
    sort_key,
)
from ..._text import did_you_mean, one_of, short_repr
from .._base import _LoaderBase

PAGE_KEYS = ("style", "size", "max_size")
PAGE_STYLES = ("cursor", "offset")
MAX_PAGE = 10_000


class _ListsLoader(_LoaderBase):
    def list_where(
        self, tool: str, decl: dict[Any, Any], record: str | None
    ) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """`filter:` as (field, operators) pairs; a list means `eq` on each field."""
        value = decl.get("filter")
        if isinstance(value, list):
            return tuple((f, ("eq",)) for f in dict.fromkeys(value) if isinstance(f, str))
        if not isinstance(value, dict) or record is None:
            return ()
        rspec = self.records[record]
        names = [f.name for f in rspec.fields]
        out = []
        for name, ops in value.items():
            field = rspec.field(name) if isinstance(name, str) else None
            if field is None:
                self.at_key(
                    value, name,
                    f"filter field {short_repr(name)} is not a field of record '{record}'; "
                    f"expected one of {one_of(names)}{did_you_mean(name, names)}",
                )  # fmt: skip
                continue
            if isinstance(ops, str):
                ops = [ops]
            if not isinstance(ops, list) or not ops:
                self.at_value(
                    value, name,
                    f"filter '{name}' must list operators, not {short_repr(ops)}; expected "
                    f"some of {one_of(OPERATORS)}, e.g. {name}: [eq, in]",
                )  # fmt: skip
                continue
            fits = [o for o in OPERATORS if field.kind in OPERATORS_FOR[o]]
            good = []
            for i, o in enumerate(ops):
                if o not in OPERATORS:
                    self.at_value(
                        ops, i,
                        f"unknown filter operator {short_repr(o)}; expected one of "
                        f"{one_of(OPERATORS)}{did_you_mean(str(o), OPERATORS)}",
                    )  # fmt: skip
                elif o not in fits:
                    kind = field.written() if field.nested else field.kind
                    self.at_value(
                        ops, i,
                        f"operator '{o}' does not apply to {record}.{name}, "
                        f"{'an' if kind[0] in 'aeiou' else 'a'} {kind} field; "
                        + (
                            f"expected one of {one_of(fits)}"
                            if fits
                            else "lists and objects cannot be filtered on; remove it"
                        ),
                    )  # fmt: skip
                elif o not in good:
                    good.append(o)
            if good:
                out.append((name, tuple(good)))
        return tuple(out)

    def list_sort(self, tool: str, decl: dict[Any, Any], record: str | None) -> tuple[str, ...]:
        if "sort" not in decl:
            return ()
        value = decl["sort"]
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not value or record is None:
            if record is not None:
                self.at_value(
                    decl, "sort",
                    f"sort must list field names, not {short_repr(value)}; expected e.g. "
                    "sort: [created_at, -amount] (the first is the default order)",
                )  # fmt: skip
            return ()
        rspec = self.records[record]
        names = [f.name for f in rspec.fields]
        out = []
        for i, e in enumerate(value):
            if not isinstance(e, str):
                self.at_value(value, i, f"a sort entry is a field name, not {short_repr(e)}")
                continue
            name, _ = sort_key(e.strip())
            field = rspec.field(name)
            if field is None:
                self.at_value(
                    value, i,
                    f"sort key '{name}' is not a field of record '{record}'; expected one of "
                    f"{one_of(names)}{did_you_mean(name, names)}",
                )  # fmt: skip
            elif field.nested:
                self.at_value(
                    value, i,
                    f"sort key '{name}' is a {field.written()} field; expected a field of a "
                    "single value (text, number, date-time, enum or ref)",
                )  # fmt: skip
            elif e.strip() in out:
                self.at_value(value, i, f"sort entry '{e}' is listed twice; expected it once")
            else:
                out.append(e.strip())
        return tuple(out)

    def list_page(self, tool: str, decl: dict[Any, Any]) -> PageSpec | None:
        if "page" not in decl:
            return None
        value = decl["page"]
        if not isinstance(value, dict):
            self.at_value(
                decl, "page",
                f"page must be a mapping, not {short_repr(value)}; expected e.g. "
                "page: {style: cursor, size: 10, max_size: 100}",
            )  # fmt: skip
            return None
        self.unknown_keys(value, PAGE_KEYS, f"page of '{tool}'")
        style = value.get("style", "cursor")
        if style not in PAGE_STYLES:
            self.at_value(
                value, "style",
                f"unknown page style {short_repr(style)}; expected cursor or offset"
                f"{did_you_mean(str(style), PAGE_STYLES)}",
            )  # fmt: skip
            return None
        sizes = {}
        for key, default in (("size", 10), ("max_size", max(100, value.get("size", 10)))):
            n = value.get(key, default)
            if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= MAX_PAGE:
                self.at_value(
                    value, key,
                    f"page {key} must be a whole number from 1 to {MAX_PAGE:_}, not "
                    f"{short_repr(n)}",
                )  # fmt: skip
                return None
            sizes[key] = n
        if sizes["size"] > sizes["max_size"]:
            self.at_value(
                value, "size",
                f"page size {sizes['size']} is above max_size {sizes['max_size']}; expected "
                "size <= max_size",
            )  # fmt: skip
            return None
        return PageSpec(style, sizes["size"], sizes["max_size"])

    def list_names_free(
        self,
        decl: dict[Any, Any],
        record: str,
        where: tuple[tuple[str, tuple[str, ...]], ...],
        sort: tuple[str, ...],
        page: PageSpec | None,
    ) -> None:
        """The tool's arguments are distinct: `amount_gt` is not also a filtered field, and
        no filter argument is named like a paging one."""
        taken: dict[str, str] = {}
        if sort:
            taken["sort"] = "sort:"
        if page is not None:
            taken.update(dict.fromkeys(PAGE_ARGS[page.style], "page:"))
        for name, ops in where:
            for o in ops:
                arg = arg_name(name, o)
                if arg in taken or (o != "eq" and arg in RESERVED_ARGS):
                    where_at = decl["filter"] if isinstance(decl["filter"], dict) else None
                    self.doc.problem(
                        self.doc.key_at(where_at, name) if where_at is not None
                        else self.doc.value_at(decl, "filter"),
                        f"filter '{name}: {o}' makes the argument '{arg}', which "
                        f"{taken.get(arg, 'page:')} already uses; expected distinct argument "
                        "names: rename the field or drop one",
                    )  # fmt: skip
                taken[arg] = f"filter '{name}'"
