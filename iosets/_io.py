"""Output files checked before the work starts and written atomically; tables read by their own names."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import InputError

if TYPE_CHECKING:
    import polars as pl

TABLE_SUFFIXES = (".parquet", ".csv")
"""The suffixes :func:`write_frame` and :func:`read_frame` know."""


def _read_umask() -> int:
    """The process umask: reading it means setting it, so this runs once, at import (see ``FILE_MODE``)."""
    umask = os.umask(0o077)
    os.umask(umask)
    return umask


FILE_MODE = 0o666 & ~_read_umask()
"""The mode of every file iosets writes: what ``open`` gives a new file under the umask.

``mkstemp`` creates 0600 files, whatever the umask, so :func:`atomic_path` sets this mode. The umask
is read once, when iosets is imported: ``os.umask`` can only read it by setting it, and a file that
another thread creates in between gets the temporary umask (0o077: private, never too open). A
program that changes its umask after importing iosets keeps the mode of the first one.
"""


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path that replaces ``path`` only if the block succeeds; its mode is ``FILE_MODE``."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        os.chmod(tmp, FILE_MODE)
        yield Path(tmp)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _check_suffix(path: Path, suffixes: tuple[str, ...], what: str) -> None:
    if suffixes and path.suffix not in suffixes:
        raise InputError(f"{path}: expected a {' or '.join(suffixes)} file name for the {what}")


def check_output(path: str | os.PathLike, *, suffixes: tuple[str, ...] = TABLE_SUFFIXES, what: str = "table") -> Path:
    """``path`` as a Path once a file can be written there, else an InputError saying why; call it before the work.

    ``path`` must end in one of ``suffixes`` (any name if empty) and not be a folder; a file must be
    creatable in its folder (see :func:`check_folder`).
    """
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{path}: is a folder; expected a file name for the {what}")
    _check_suffix(path, suffixes, what)
    _probe(path.parent, path, what)
    return path


def check_folder(folder: str | os.PathLike, *, what: str) -> Path:
    """``folder`` as a Path once files can be written in it, else an InputError saying why.

    The check creates the missing folders and a temporary file, then removes them: it leaves nothing
    behind (the writes create the folders).
    """
    folder = Path(folder)
    _probe(folder, folder, what)
    return folder


def _probe(folder: Path, target: Path, what: str) -> None:
    """Raise InputError naming ``target`` unless a file can be created in ``folder``; leave nothing behind."""
    real = folder.resolve()  # '..' and links resolved: the folders removed are exactly those created
    chain = (real, *real.parents)
    n_missing = next(i for i, ancestor in enumerate(chain) if ancestor.exists())
    if not chain[n_missing].is_dir():
        raise InputError(f"{target}: cannot write the {what}: {chain[n_missing]} is a file, not a folder")
    try:
        real.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=real).close()
    except OSError as exc:
        raise InputError(f"{target}: cannot write the {what} in {folder} ({exc.strerror or exc})") from None
    finally:
        for created in chain[:n_missing]:
            with contextlib.suppress(OSError):
                created.rmdir()


def write_frame(frame: pl.DataFrame, path: str | os.PathLike) -> Path:
    """Write ``frame`` atomically as ``.parquet`` or ``.csv``, chosen by the suffix."""
    path = Path(path)
    _check_suffix(path, TABLE_SUFFIXES, "table")
    with atomic_path(path) as tmp:
        frame.write_parquet(tmp) if path.suffix == ".parquet" else frame.write_csv(tmp)
    return path


def read_frame(path: str | os.PathLike, *, what: str = "table", schema_overrides=None) -> pl.DataFrame:
    """Read a ``.parquet`` or ``.csv`` table, naming the file and the reason when it cannot be read.

    The path is a file name, never a glob pattern: ``x[1].csv`` is read as it is.
    """
    import polars as pl

    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    try:
        if path.suffix == ".parquet":
            return pl.read_parquet(path, glob=False)
        return pl.read_csv(path, schema_overrides=schema_overrides, glob=False)
    except (pl.exceptions.PolarsError, OSError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"{path}: not a readable {what} ({first})") from None


def read_json(path: str | os.PathLike) -> Any:
    """The JSON document in ``path``; InputError naming the file when it cannot be read or parsed."""
    import json

    path = Path(path)
    try:
        return json.loads(path.read_bytes())
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except RecursionError:
        raise InputError(f"{path}: not valid JSON (nested too deeply)") from None
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, integers of more than 4300 digits
        raise InputError(f"{path}: not valid JSON ({exc})") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
