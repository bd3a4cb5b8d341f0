"""Shared helpers of the importer tests: the corpus of real documents in ../shared/openapi/
(relative to the project root; tests that need a document skip, saying so, where it is
absent)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT.parent / "shared" / "openapi"
SLOW = os.environ.get("FAULTBENCH_SLOW") == "1"


def corpus(name: str) -> Path:
    path = CORPUS / name
    if not path.is_file():
        pytest.skip(f"{path} is absent: the OpenAPI corpus lives in ../shared/openapi/")
    return path
