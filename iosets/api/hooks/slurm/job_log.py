"""Read a finished job's Darshan log for the epilog: as the job's user, regular files only, bounded, in time.

Standard library only (slurmctld's ``python3``). slurmctld runs its epilog as root (or as
``SlurmUser``) on paths the job's user writes, so the log is read by a forked child that

1. becomes the job's user (``setgroups`` to the user's groups, ``setgid``, ``setuid``) when the
   epilog runs as root, so it never reads what the user could not; under any other account it
   cannot, and relies on the checks below alone;
2. finds the log (``find``, a glob of the user's paths) and takes the first match;
3. opens it one component at a time below ``base`` (the site's part of the path) with
   ``O_NOFOLLOW``: a symbolic link anywhere below ``base`` refuses the log;
4. opens the file ``O_NONBLOCK`` (a FIFO cannot hold the open), then ``fstat``: a regular file,
   owned by the job's uid, at most ``limit`` bytes;
5. reads at most ``limit`` bytes and hands them over a pipe.

The caller waits at most ``timeout`` seconds in all (fork, glob, open, read), then kills the
child. A refused log raises :class:`LogRefused`, whose reason names the failed check and never
holds a byte of the file.
"""

from __future__ import annotations

import json
import os
import pwd
import select
import signal
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

MAGIC = "%*?["
"""Characters that make a path component the user's (a ``%u``-style field or a glob)."""
HEADER_MAX = 64 << 10
"""Bytes a header line (a JSON object naming the path, the size or the reason) may take."""
_CHUNK = 1 << 20
_T = TypeVar("_T")
_KINDS = (
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class LogRefused(Exception):
    """The log was not read: ``path`` (the pattern when no path was found yet) and the ``reason``."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path, self.reason = path, reason


@dataclass(frozen=True)
class JobLog:
    """A log read for the epilog: its path and its bytes."""

    path: str
    data: bytes | bytearray


@dataclass(frozen=True)
class Owner:
    """The job's user: uid, gid (None: the passwd entry's) and name (None: groups are ``[gid]``)."""

    uid: int
    gid: int | None = None
    name: str | None = None


def fixed_folder(pattern: str) -> str:
    """The folder of ``pattern`` before its first component with ``%``, ``*``, ``?`` or ``[``: the site's.

    >>> fixed_folder("/lustre/darshan/%u/*_id%j-*.darshan")
    '/lustre/darshan'
    """
    parts = pattern.split("/")
    fixed = []
    for part in parts[:-1]:
        if any(c in part for c in MAGIC):
            break
        fixed.append(part)
    return "/".join(fixed) or ("/" if pattern.startswith("/") else ".")


def read_job_log(
    find: Callable[[], list[str]], *, base: str, owner: Owner, limit: int, timeout: float, label: str
) -> JobLog | None:
    """The first log ``find`` lists, read as ``owner``; None when it lists none.

    Parameters
    ----------
    find : callable
        Returns the candidate paths, first one read; runs in the child, as ``owner``.
    base : str
        Folder the paths start from (the site's: followed even if a symbolic link); below it, no link.
    owner : Owner
        The job's user: the log must be theirs, and is read with their rights when this process is root.
    limit : int
        Largest log read, bytes.
    timeout : float
        Seconds for everything; the child is then killed.
    label : str
        What names the log in a refusal made before a path was found (the pattern).

    Raises
    ------
    LogRefused
        A check failed, the child died, or ``timeout`` passed; the reason says which.
    """
    deadline = time.monotonic() + timeout
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into the caller
        try:
            os.close(read_end)
            _answer(write_end, find, base, owner, limit)
        finally:
            os._exit(0)
    os.close(write_end)
    reader = _Reader(read_end, deadline)
    path = label
    try:
        found = reader.header()
        if "refused" in found:
            raise LogRefused(path, reader.end(found["refused"]))
        if found.get("path") is None:
            return reader.end(None)
        path = str(found["path"])
        read = reader.header()
        if "refused" in read:
            raise LogRefused(path, reader.end(read["refused"]))
        size = read.get("size")
        if not isinstance(size, int) or size < 0:
            raise _Cut("a malformed header")
        if size > limit:
            raise LogRefused(path, f"{size} bytes, more than the limit of {limit} bytes")
        return reader.end(JobLog(path, reader.exactly(size)))
    except _Late:
        raise LogRefused(path, f"not read within {timeout:g} s (the reader was killed)") from None
    except _Cut as cut:
        raise LogRefused(path, f"the reader stopped early: {cut}") from None
    finally:
        os.close(read_end)
        _reap(pid, waited=reader.ended)


class _Late(Exception):
    """The deadline passed."""


class _Cut(Exception):
    """The child's answer ended early or was malformed."""


class _Reader:
    """The parent's end of the pipe: header lines, then bytes, each wait bounded by ``deadline``."""

    def __init__(self, fd: int, deadline: float) -> None:
        self.fd, self.deadline = fd, deadline
        self.buffer = bytearray()
        self.ended = False

    def _more(self, most: int) -> bytes:
        left = self.deadline - time.monotonic()
        if left <= 0 or not select.select([self.fd], [], [], left)[0]:
            raise _Late
        return os.read(self.fd, most)

    def header(self) -> dict:
        while b"\n" not in self.buffer:
            if len(self.buffer) > HEADER_MAX:
                raise _Cut(f"a header of more than {HEADER_MAX} bytes")
            chunk = self._more(HEADER_MAX)
            if not chunk:
                raise _Cut("no answer")
            self.buffer += chunk
        line, _, rest = bytes(self.buffer).partition(b"\n")
        self.buffer = bytearray(rest)
        try:
            header = json.loads(line)
        except ValueError:
            raise _Cut("a malformed header") from None
        if not isinstance(header, dict):
            raise _Cut("a malformed header")
        return header

    def exactly(self, size: int) -> bytearray:
        data = self.buffer[:size]
        del self.buffer[:size]
        while len(data) < size:
            chunk = self._more(min(_CHUNK, size - len(data)))
            if not chunk:
                raise _Cut(f"{len(data)} of {size} bytes")
            data += chunk
        return data

    def end(self, result: _T) -> _T:
        """``result``, once the child has closed the pipe (it has nothing left to do but exit)."""
        if self.buffer or self._more(1):
            raise _Cut("more than it announced")
        self.ended = True
        return result


def _reap(pid: int, *, waited: bool) -> None:
    """Collect the child: ``waited`` (it closed the pipe, so it is exiting), else kill it and leave it.

    A child killed in a hung read may not die at once; it is not waited for.
    """
    if not waited:
        os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0 if waited else os.WNOHANG)


# ---- the child ---------------------------------------------------------------------------------------------------


def _answer(fd: int, find: Callable[[], list[str]], base: str, owner: Owner, limit: int) -> None:
    """Write to ``fd`` ``{"path": p}`` (null: no log), then ``{"size": n}`` and the bytes; or ``{"refused": why}``."""
    with os.fdopen(fd, "wb") as out:

        def say(**header) -> None:
            out.write(json.dumps(header).encode() + b"\n")
            out.flush()

        try:
            _become(owner)
            found = find()
        except (_Refusal, OSError) as error:
            return say(refused=_why(error))
        say(path=found[0] if found else None)
        if not found:
            return None
        try:
            data = _read(found[0], base, owner.uid, limit)
        except (_Refusal, OSError) as error:
            return say(refused=_why(error))
        say(size=len(data))
        out.write(data)
    return None


def _why(error: Exception) -> str:
    """A refusal's reason: the check's own words, or the system's (a file's name at most, never its bytes)."""
    if isinstance(error, OSError):
        return f"{error.strerror or type(error).__name__} (read as uid {os.geteuid()})"
    return str(error)


class _Refusal(Exception):
    """A check failed in the child; the message is the reason."""


def _become(owner: Owner) -> None:
    """Take the job's user's uid, gid and groups, when this process is root and not that user already."""
    if os.geteuid() != 0 or owner.uid == 0:
        return
    gid = owner.gid
    if gid is None:
        try:
            gid = pwd.getpwuid(owner.uid).pw_gid
        except KeyError:
            raise _Refusal(f"uid {owner.uid}: no SLURM_JOB_GID and no passwd entry to take a group from") from None
    groups = os.getgrouplist(owner.name, gid) if owner.name else [gid]
    os.setgroups(groups)
    os.setgid(gid)
    os.setuid(owner.uid)
    if (os.getuid(), os.geteuid(), os.getgid()) != (owner.uid, owner.uid, gid):
        raise _Refusal(f"could not become uid {owner.uid}")


def _read(path: str, base: str, uid: int, limit: int) -> bytes:
    """``path``'s bytes: opened below ``base`` with no link followed, checked, read up to ``limit``."""
    relative = os.path.relpath(path, base)
    parts = relative.split(os.sep)
    if any(part in ("", ".", "..") for part in parts):
        raise _Refusal(f"not below {base}")
    folder = os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts[:-1]:
            inner = _open_at(folder, part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
            os.close(folder)
            folder = inner
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
        fd = _open_at(folder, parts[-1], flags)
    finally:
        os.close(folder)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _Refusal(f"{_kind(info.st_mode)}, not a regular file")
        if info.st_uid != uid:
            raise _Refusal(f"owned by uid {info.st_uid}, not the job's user (uid {uid})")
        if info.st_size > limit:
            raise _Refusal(f"{info.st_size} bytes, more than the limit of {limit} bytes")
        chunks, size = [], 0
        while chunk := os.read(fd, min(_CHUNK, limit + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                raise _Refusal(f"grew past the limit of {limit} bytes while read")
        return b"".join(chunks)
    finally:
        os.close(fd)


def _open_at(folder: int, name: str, flags: int) -> int:
    """``openat(folder, name, flags)``; a refusal naming the component when it is a link or not a folder."""
    try:
        return os.open(name, flags, dir_fd=folder)
    except OSError as error:
        try:
            mode = os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode
        except OSError:
            raise error from None
        if stat.S_ISLNK(mode):
            raise _Refusal(f"{name}: a symbolic link (none is followed in the user's part of the path)") from None
        if flags & os.O_DIRECTORY and not stat.S_ISDIR(mode):
            raise _Refusal(f"{name}: {_kind(mode)}, not a folder") from None
        raise


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "a regular file" if stat.S_ISREG(mode) else "special")
