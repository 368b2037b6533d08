"""The benchmark program, compiled with the system's C compiler into a per-user cache, once per source change."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

from ..errors import InputError

PACKAGE = Path(__file__).resolve().parents[1]
PERIODIC_SOURCE = PACKAGE / "validate" / "src" / "periodic.c"
CLIENT_DIR = PACKAGE / "arbiter" / "client"
CLIENT_SOURCES = (CLIENT_DIR / "iosets_arbiter.c", CLIENT_DIR / "iosets_arbiter.h")
CFLAGS = ("-O2", "-std=c11", "-Wall", "-Wextra")
"""The flags of ``make clients`` too (Makefile)."""


def cache_folder() -> Path:
    """Where compiled programs are kept: ``$XDG_CACHE_HOME/iosets`` (default ``~/.cache/iosets``)."""
    root = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(root) / "iosets"


def build_periodic(folder: str | os.PathLike | None = None) -> Path:
    """The path of the ``periodic`` benchmark program, compiled from ``periodic.c`` and the arbiter's C client.

    The program is named after a digest of the compiler (``$CC``, default ``cc``), its flags and the
    sources, so a change to any of them builds a new one and an unchanged tree reuses it.

    Parameters
    ----------
    folder : path, default=None
        Where to keep it; by default :func:`cache_folder`.

    Returns
    -------
    pathlib.Path
        The executable.

    Raises
    ------
    InputError
        The compiler is missing or fails; the message holds the compiler's own.
    """
    compiler = os.environ.get("CC") or "cc"
    sources = (PERIODIC_SOURCE, *CLIENT_SOURCES)
    digest = hashlib.sha256("\0".join((compiler, *CFLAGS)).encode())
    for source in sources:
        try:
            digest.update(source.read_bytes())
        except OSError as exc:
            raise InputError(f"{source}: the benchmark program's source is missing ({exc.strerror})") from None
    folder = Path(folder) if folder is not None else cache_folder()
    target = folder / f"periodic-{digest.hexdigest()[:16]}"
    if os.access(target, os.X_OK):
        return target
    folder.mkdir(parents=True, exist_ok=True)
    partial = folder / f".{target.name}.{os.getpid()}"
    command = [compiler, *CFLAGS, "-I", str(CLIENT_DIR), str(PERIODIC_SOURCE), str(sources[1]), "-o", str(partial)]
    try:
        done = subprocess.run([*command, "-lm"], capture_output=True, text=True, check=False)
    except OSError as exc:
        raise InputError(
            f"cannot run the C compiler {compiler!r} ({exc.strerror}): iosets validate compiles its benchmark "
            "program with it; install one (gcc or clang) or name it in CC"
        ) from None
    if done.returncode != 0:
        partial.unlink(missing_ok=True)
        message = done.stderr.strip() or done.stdout.strip() or f"exit status {done.returncode}"
        raise InputError(f"{compiler} could not compile {PERIODIC_SOURCE.name}: {message}")
    os.replace(partial, target)
    return target
