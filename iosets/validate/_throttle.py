"""A block-I/O cgroup that caps every run process's reads and writes on the disk holding the run's folder.

On a disk shared with other tenants, the bandwidth a run gets varies from one repetition to the next;
a cap well below the device makes the bandwidth the run's processes share the cap's. cgroup v1:
``blkio.throttle.{read,write}_bps_device``; cgroup v2: ``io.max``. Only direct I/O is charged to the
group under cgroup v1 (buffered writes are written back by the kernel, outside it), which is why the
benchmark program writes with O_DIRECT.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError

CGROUP_ROOT = Path("/sys/fs/cgroup")
SYS_ROOT = Path("/sys")


@dataclass(frozen=True)
class Throttle:
    """A throttle group: processes written to ``procs`` (``cgroup.procs``) share ``rate`` bytes/s on ``device``."""

    folder: Path
    device: str
    rate: float

    @property
    def procs(self) -> Path:
        """The file a process writes its pid to, to join the group."""
        return self.folder / "cgroup.procs"

    def wrap(self, command: list[str]) -> list[str]:
        """``command`` run inside the group: a shell joins it, then becomes the command (children follow)."""
        return ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', str(self.procs), *command]


def block_device(path: str | os.PathLike, *, sys_root: Path = SYS_ROOT) -> str:
    """``MAJ:MIN`` of the disk holding ``path`` (a partition's disk), as the throttle files name it."""
    st = os.stat(path)
    device = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    entry = sys_root / "dev" / "block" / device
    if not entry.exists():
        raise InputError(
            f"--throttle: {path} is on device {device}, which is not a block device (tmpfs, overlay or a "
            "network file system): the block-I/O cgroup cannot throttle it"
        )
    if (entry / "partition").exists():
        return (entry.resolve().parent / "dev").read_text().strip()
    return device


@contextlib.contextmanager
def throttle_group(
    path: str | os.PathLike, rate: float, *, cgroup_root: Path = CGROUP_ROOT, sys_root: Path = SYS_ROOT
) -> Iterator[Throttle]:
    """A cgroup named ``iosets-validate-<pid>`` capping reads and writes on ``path``'s disk at ``rate`` bytes/s,
    removed at the end (its processes must have ended by then).

    Raises InputError when not root, when no block-I/O controller is mounted, or when ``path`` is not
    on a block device.
    """
    device = block_device(path, sys_root=sys_root)
    name, limit = f"iosets-validate-{os.getpid()}", int(rate)
    if (cgroup_root / "blkio").is_dir():
        folder = cgroup_root / "blkio" / name
        settings = {
            "blkio.throttle.write_bps_device": f"{device} {limit}",
            "blkio.throttle.read_bps_device": f"{device} {limit}",
        }
    elif "io" in _read(cgroup_root / "cgroup.controllers").split():
        folder = cgroup_root / name
        settings = {"io.max": f"{device} rbps={limit} wbps={limit}"}
    else:
        raise InputError(
            f"--throttle needs the block-I/O cgroup controller: {cgroup_root} has no blkio hierarchy (cgroup v1) "
            "and no io controller in cgroup.controllers (cgroup v2)"
        )
    if os.geteuid() != 0:
        raise InputError(f"--throttle needs root: it creates the cgroup {folder} (running as uid {os.geteuid()})")
    try:
        if "io.max" in settings and "io" not in _read(cgroup_root / "cgroup.subtree_control").split():
            (cgroup_root / "cgroup.subtree_control").write_text("+io")
        folder.mkdir()
    except OSError as exc:
        raise InputError(f"--throttle: cannot create the cgroup {folder} ({exc.strerror or exc})") from None
    try:
        for file, value in settings.items():
            try:
                (folder / file).write_text(value)
            except OSError as exc:
                raise InputError(f"--throttle: cannot write {value!r} to {folder / file} ({exc.strerror})") from None
        yield Throttle(folder, device, float(limit))
    finally:
        _remove(folder)


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _remove(folder: Path, attempts: int = 50) -> None:
    """Remove an emptied cgroup; the kernel may take a moment to see its last process gone."""
    for _ in range(attempts):
        try:
            folder.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.1)
    folder.rmdir()  # still busy: the error names the cgroup left behind
