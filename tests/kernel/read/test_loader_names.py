"""Record accessors: a record is `world.<name>` and `world.<plural(name)>`."""

import pytest

from faultbench.kernel._text._names import plural
from faultbench.kernel.lowlevel import did_you_mean


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("refund", "refunds"),
        ("order", "orders"),
        ("category", "categories"),
        ("address", "addresses"),
        ("status", "statuses"),
        ("box", "boxes"),
        ("match", "matches"),
        ("day", "days"),
        ("person", "people"),
        ("analysis", "analyses"),
        ("thief", "thieves"),
        ("matrix", "matrices"),
        ("bus", "buses"),
        ("series", "series"),
        ("line_item", "line_items"),
        ("order_status", "order_statuses"),
        ("orders", "orders"),
        ("payment_intents", "payment_intents"),
        ("categories", "categories"),
        ("people", "people"),
        ("data", "data"),
        ("Order", "Orders"),
        ("Person", "People"),
    ],
)
def test_plural(word, expected):
    assert plural(word) == expected


def test_did_you_mean():
    assert did_you_mean("opertions", ["records", "operations"]) == "; did you mean 'operations'?"
    assert did_you_mean("Records", ["records"]) == "; did you mean 'records'?"
    assert did_you_mean("zzz", ["records"]) == ""
    assert did_you_mean(3, ["records"]) == ""
