"""`input_schema:` on a custom operation: the tool's JSON Schema shown verbatim (what
`faultbench import mcp` writes), its top-level properties validated like handler arguments."""

from __future__ import annotations

import pytest

from faultbench import WorldFileError, load_world
from faultbench.kernel.lowlevel import load_spec

SCHEMA = (
    "{type: object, properties: {timezone: {type: string, description: IANA name}, "
    "hours: {type: [integer, 'null']}, unit: {type: string, enum: [h, m]}}, "
    "required: [timezone], additionalProperties: false}"
)


def _world(tmp_path, schema=SCHEMA, kind="custom", handler="h.get_time"):
    (tmp_path / "h.py").write_text(
        "def get_time(world, clock, **args):\n    return {'args': args}\n"
    )
    (tmp_path / "w.yaml").write_text(
        "name: t\nservices:\n  s:\n    records: {r: {n: int}}\n    operations:\n"
        f"      get_time: {{kind: {kind}, handler: {handler}, input_schema: {schema}}}\n"
    )
    return tmp_path / "w.yaml"


def test_the_schema_is_shown_as_written_and_its_properties_are_checked(tmp_path):
    world = load_world(_world(tmp_path))
    assert world.tool("get_time").input_schema == {
        "type": "object",
        "properties": {
            "timezone": {"type": "string", "description": "IANA name"},
            "hours": {"type": ["integer", "null"]},
            "unit": {"type": "string", "enum": ["h", "m"]},
        },
        "required": ["timezone"],
        "additionalProperties": False,
    }
    assert world.call("get_time", {"timezone": "UTC", "hours": 2}).value == {
        "args": {"timezone": "UTC", "hours": 2}
    }
    assert "missing required argument `timezone`" in world.call("get_time", {}).error
    assert not world.call("get_time", {"timezone": "UTC", "unit": "s"}).ok
    assert not world.call("get_time", {"timezone": "UTC", "other": 1}).ok


@pytest.mark.parametrize(
    ("schema", "kind", "message"),
    [
        ("{type: array}", "custom", "must be a JSON Schema of an object"),
        ("{properties: [a]}", "custom", "must be a JSON Schema of an object"),
        ("{type: object}", "get, record: r", "'input_schema' is only for kind: custom"),
    ],
)
def test_a_schema_that_is_not_an_object_or_not_custom_is_refused(tmp_path, schema, kind, message):
    with pytest.raises(WorldFileError) as info:
        load_spec(_world(tmp_path, schema=schema, kind=kind))
    assert message in str(info.value)
    assert "w.yaml:6:" in str(info.value)


def _annotated(tmp_path, extra):
    (tmp_path / "h.py").write_text("def wipe(world, clock):\n    return 1\n")
    (tmp_path / "w.yaml").write_text(
        "name: t\nservices:\n  s:\n    operations:\n"
        f"      wipe: {{kind: custom, handler: h.wipe, {extra}}}\n"
    )
    return tmp_path / "w.yaml"


def test_title_and_annotations_are_listed_as_written(tmp_path):
    """`title:` (what `faultbench import mcp` copies from the server) replaces the title made
    from the name; `annotations:` override the hints the kind gives, hint by hint."""
    from faultbench.serve._calls import tool_wire

    world = load_world(
        _annotated(tmp_path, "title: Wipe it all, annotations: {destructiveHint: false, "
                   "readOnlyHint: true}")
    )  # fmt: skip
    wire = tool_wire(world.tool("wipe"))
    assert wire["title"] == "Wipe it all"
    assert wire["annotations"] == {
        "destructiveHint": False,
        "readOnlyHint": True,
        "idempotentHint": False,  # the custom kind's, not written
        "openWorldHint": False,
    }
    plain = load_world(_annotated(tmp_path, "description: x"))
    assert tool_wire(plain.tool("wipe"))["annotations"]["readOnlyHint"] is False  # the kind's
    assert tool_wire(plain.tool("wipe"))["title"] == "Wipe"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("annotations: [readOnlyHint]", "must be a mapping of hints"),
        ("annotations: {readOnly: true}", "unknown annotation 'readOnly'"),
        ("annotations: {readOnlyHint: yes please}", "readOnlyHint of 'wipe' must be true or"),
        ("title: [a]", "title of 'wipe' must be text"),
    ],
)
def test_bad_annotations_name_the_line(tmp_path, extra, message):
    with pytest.raises(WorldFileError) as info:
        load_spec(_annotated(tmp_path, extra))
    assert message in str(info.value)
    assert "w.yaml:5:" in str(info.value)
