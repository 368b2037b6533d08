"""Fixtures for the Darshan fuzz corpus; makes the sibling modules (``corpus``, ``classify``) importable."""

import sys
from pathlib import Path

import pytest

HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:  # tests/fuzz is not a package
    sys.path.insert(0, HERE)

from corpus import make_corpus  # noqa: E402


@pytest.fixture(scope="session")
def darshan_fuzz_corpus(tmp_path_factory):
    """300 seeded mutants of good Darshan logs (about 35 MB, under a second): ``(directory, manifest)``."""
    out = tmp_path_factory.mktemp("darshan-fuzz")
    return out, make_corpus(out, 300, random_state=0)
