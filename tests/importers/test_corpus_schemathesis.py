"""Schemathesis on the CRUD operations of the eleven documents of ../shared/openapi/ served
back with `serve --rest` (skipped, saying so, where the corpus is absent). With
FAULTBENCH_SLOW=1 (the large documents take a minute or more each); `-s` prints each
document's row of docs/IMPORT.md's table (failures by check) and an example of each.

No request gets a 5xx on any document; the documents in `_ZERO` get no failure at all."""

from __future__ import annotations

import pytest

from .conftest import SLOW, corpus
from .fuzz import fuzz, imported_world
from .test_corpus import LARGE, SMALL

#: documents where Schemathesis finds nothing at all on the CRUD operations
_ZERO = {
    "oai_uspto.yaml",
    "oai_tictactoe.json",
    "paypal_invoicing_v2.json",
    "twilio_api_v2010.json",
}


@pytest.mark.skipif(not SLOW, reason="FAULTBENCH_SLOW=1 runs it")
@pytest.mark.parametrize("name", [*SMALL, *LARGE])
def test_schemathesis_on_a_corpus_documents_crud_operations(tmp_path, name):
    source = corpus(name)
    imported, world = imported_world(tmp_path, source, "world")
    found = fuzz(source, imported, world, examples=3)
    print("\n" + found.row(name, imported.report))
    print(found.examples)
    assert "ServerError" not in found.failures, found.examples["ServerError"]
    if name in _ZERO:
        assert found.examples == {}
