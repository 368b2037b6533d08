"""Darshan fuzz corpus and its tests (a package, so that its conftest does not clash with tests/conftest.py)."""
