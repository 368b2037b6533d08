"""The benchmark program's build: cached by content, rebuilt when a source changes, a clear error without a compiler."""

from __future__ import annotations

import os
import shutil

import pytest

import iosets.validate._build as build
from iosets.errors import InputError
from iosets.validate import build_periodic


def test_an_unchanged_tree_reuses_the_program_and_a_changed_source_builds_a_new_one(tmp_path, monkeypatch):
    if shutil.which(os.environ.get("CC") or "cc") is None:
        pytest.skip("no C compiler")
    source = tmp_path / "periodic.c"
    shutil.copy(build.PERIODIC_SOURCE, source)
    monkeypatch.setattr(build, "PERIODIC_SOURCE", source)
    first = build_periodic(tmp_path / "cache")
    assert build_periodic(tmp_path / "cache") == first
    built = first.stat().st_mtime_ns
    source.write_text(source.read_text() + "/* changed */\n")
    second = build_periodic(tmp_path / "cache")
    assert second != first and os.access(second, os.X_OK)
    assert first.stat().st_mtime_ns == built  # the former one is left as it was
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == sorted([first.name, second.name])


def test_a_missing_compiler_is_named(tmp_path, monkeypatch):
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    with pytest.raises(InputError, match=f"cannot run the C compiler '{tmp_path / 'no-such-cc'}' .*install one"):
        build_periodic(tmp_path / "cache")


def test_a_failing_compiler_gives_its_own_message(tmp_path, monkeypatch):
    compiler = tmp_path / "broken-cc"
    compiler.write_text("#!/bin/sh\necho 'periodic.c:1: fatal error: stdio.h: No such file' >&2\nexit 1\n")
    compiler.chmod(0o755)
    monkeypatch.setenv("CC", str(compiler))
    message = "could not compile periodic.c: periodic.c:1: fatal error: stdio.h: No such file"
    with pytest.raises(InputError, match=message):
        build_periodic(tmp_path / "cache")
    assert list((tmp_path / "cache").iterdir()) == []  # no half-built program left
