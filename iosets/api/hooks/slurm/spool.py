"""The epilog's spool: rows it could not post, kept on disk until the service takes them.

Standard library only (slurmctld's ``python3``). One row is one JSON file named
``<time in ns>-<pid>-<job id>.json`` in the spool folder, written whole (a temporary name,
then a rename) and 0600; the folder is made 0700 and refused when it is a link, another
user's, or writable by group or others (a planted row would be posted with the hook's
token). Names sort oldest first. A row the service refused for good (a 4xx other than 401,
403, 408 or 429: the row itself is wrong) moves to ``rejected/`` with the reason, and is
never sent again. The spool is bounded: at most ``max_files`` files and ``max_bytes``
bytes, rejected rows included; adding a row past either drops the oldest files, each named
in the log.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import stat
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

FOLDER_MODE = 0o700
FILE_MODE = 0o600
REJECTED = "rejected"
LOCK = ".drain.lock"
ROW_MAX = 1 << 20
"""Bytes of a spooled file read back; a larger one is set aside."""
_UNSAFE = re.compile(r"[^A-Za-z0-9_.+-]")


class Rejected(Exception):
    """The service refused a row for good: it is set aside with this reason, never sent again."""


class SpoolError(Exception):
    """The spool folder cannot be used (says why)."""


@dataclass(frozen=True)
class Drained:
    """What one drain did: rows posted, rows set aside, rows still waiting."""

    posted: int
    rejected: int
    waiting: int


class Spool:
    """Rows waiting in ``folder``, at most ``max_files`` files and ``max_bytes`` bytes; ``log`` takes one line."""

    def __init__(self, folder: str | os.PathLike, *, max_files: int, max_bytes: int, log: Callable[[str], None]):
        self.folder = Path(folder)
        self.rejected = self.folder / REJECTED
        self.max_files = max_files
        self.max_bytes = max_bytes
        self.log = log

    def add(self, row: dict) -> Path:
        """Write ``row`` (a jobs-table row with its ``job_id``) as the newest file; its path.

        The oldest files are dropped first when the row would pass the cap; SpoolError when
        the folder cannot be used.
        """
        data = json.dumps(row, sort_keys=True).encode()
        self._check_folder(self.folder, make=True)
        self._make_room(len(data))
        name = f"{time.time_ns():020d}-{os.getpid()}-{_UNSAFE.sub('_', str(row.get('job_id', '')))[:64]}.json"
        return self._write(self.folder / name, data)

    def drain(self, post: Callable[[dict, float], object], time_left: Callable[[], float]) -> Drained:
        """Post the waiting rows oldest first with ``post(row, timeout)`` while ``time_left()`` gives time.

        A row is removed once ``post`` returns (the service stored it, now or before: a job id is
        stored once); ``post`` raising :class:`Rejected` sets it aside with the reason; any other
        exception ends the drain (the service is away: the row waits). Only one drain runs at a
        time: another finds the lock taken and posts nothing. A missing folder is an empty spool.
        """
        posted = rejected = 0
        if not self.folder.is_dir():
            return Drained(0, 0, 0)
        self._check_folder(self.folder, make=False)
        with self._drain_lock() as locked:
            if not locked:
                return Drained(0, 0, len(self.waiting()))
            for path in self.waiting():
                timeout = time_left()
                if timeout <= 0:
                    break
                try:
                    row = self._read(path)
                except FileNotFoundError:  # dropped by a full spool meanwhile
                    continue
                except ValueError as bad:  # not a row this spool wrote
                    self._set_aside(path, f"unreadable: {bad}")
                    rejected += 1
                    continue
                try:
                    post(row, timeout)
                except Rejected as refused:
                    self._set_aside(path, str(refused))
                    rejected += 1
                    continue
                except Exception as error:  # noqa: BLE001 - the service is away: the row waits
                    self.log(f"spool {self.folder}: {path.name} waits: {error}")
                    break
                path.unlink(missing_ok=True)
                posted += 1
        return Drained(posted, rejected, len(self.waiting()))

    def waiting(self) -> list[Path]:
        """The rows waiting to be posted, oldest first."""
        return sorted(p for p in self.folder.glob("*.json") if not p.name.startswith("."))

    def set_aside(self) -> list[Path]:
        """The rows the service refused for good, oldest first."""
        return sorted(self.rejected.glob("*.json")) if self.rejected.is_dir() else []

    # ---------------------------------------------------------------------------------------------------------------

    def _check_folder(self, folder: Path, *, make: bool) -> None:
        """Make ``folder`` (mode 0700) if missing and ``make``; SpoolError unless it is a private folder of ours."""
        if make:
            try:
                os.mkdir(folder, FOLDER_MODE)
                os.chmod(folder, FOLDER_MODE)  # whatever the umask
            except FileExistsError:
                pass
            except OSError as error:
                raise SpoolError(f"spool {folder}: cannot make it: {error.strerror}") from None
        try:
            info = os.lstat(folder)
        except OSError as error:
            raise SpoolError(f"spool {folder}: {error.strerror}") from None
        if not stat.S_ISDIR(info.st_mode):
            raise SpoolError(f"spool {folder}: not a folder (a link or a file)")
        if info.st_uid != os.geteuid():
            raise SpoolError(f"spool {folder}: owned by uid {info.st_uid}, not by this hook's uid {os.geteuid()}")
        if info.st_mode & 0o022:
            raise SpoolError(f"spool {folder}: mode {stat.S_IMODE(info.st_mode):04o} lets others write (0700 expected)")

    def _files(self) -> list[tuple[str, Path, int]]:
        """Every spooled file (waiting and set aside) as (name, path, size), oldest first."""
        found = []
        for path in [*self.waiting(), *self.set_aside()]:
            try:
                found.append((path.name, path, path.lstat().st_size))
            except FileNotFoundError:
                continue
        return sorted(found)

    def _make_room(self, size: int) -> None:
        """Drop the oldest files until one more of ``size`` bytes fits the cap, each named in the log."""
        files = self._files()
        total = sum(size for _, _, size in files)
        while files and (len(files) + 1 > self.max_files or total + size > self.max_bytes):
            name, path, dropped = files.pop(0)
            path.unlink(missing_ok=True)
            total -= dropped
            where = "set-aside row" if path.parent == self.rejected else "row"
            self.log(
                f"spool {self.folder} full ({self.max_files} files, {self.max_bytes} bytes at most):"
                f" dropped the oldest {where} {name}"
            )

    def _write(self, path: Path, data: bytes) -> Path:
        """``data`` in a new file ``path`` (0600), complete or absent: written under a temporary name, then renamed."""
        temporary = path.with_name(f".{path.name}.tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE)
        try:
            os.fchmod(fd, FILE_MODE)
            os.write(fd, data)
            os.fsync(fd)
        except BaseException:
            os.close(fd)
            temporary.unlink(missing_ok=True)
            raise
        os.close(fd)
        os.rename(temporary, path)
        return path

    def _read(self, path: Path) -> dict:
        """The row in ``path`` (a regular file, no link, at most :data:`ROW_MAX` bytes); ValueError otherwise."""
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError as error:
            if error.errno == errno.ENOENT:
                raise FileNotFoundError(path) from None
            raise ValueError(error.strerror) from None
        with os.fdopen(fd, "rb") as file:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise ValueError("not a regular file")
            data = file.read(ROW_MAX + 1)
        if len(data) > ROW_MAX:
            raise ValueError(f"larger than {ROW_MAX} bytes")
        row = json.loads(data)
        if not isinstance(row, dict) or not row.get("job_id"):
            raise ValueError("not a JSON object with a job_id")
        return row

    def _set_aside(self, path: Path, reason: str) -> None:
        """Move ``path``'s row to ``rejected/`` with ``reason``; it is never posted again."""
        self._check_folder(self.rejected, make=True)
        try:
            row: object = self._read(path)
        except ValueError:
            row = None
        except FileNotFoundError:
            return
        (self.rejected / path.name).unlink(missing_ok=True)  # a drain stopped between the two steps
        self._write(self.rejected / path.name, json.dumps({"reason": reason, "row": row}, sort_keys=True).encode())
        path.unlink(missing_ok=True)
        self.log(f"spool {self.folder}: {path.name} set aside in {REJECTED}/: {reason}")

    @contextmanager
    def _drain_lock(self) -> Iterator[bool]:
        """Whether this process holds the drain lock (taken without waiting) for the block."""
        fd = os.open(self.folder / LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, FILE_MODE)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield False
                return
            yield True
        finally:
            os.close(fd)
