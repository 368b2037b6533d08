"""darshan-runtime around the benchmark programs: non-MPI mode through LD_PRELOAD, one log folder per run.

darshan-runtime is not packaged by Debian; docs/guides/validate.md says how to build the upstream 3.5.0 with
``--without-mpi --with-log-path-by-env=DARSHAN_LOG_DIR --with-jobid-env=IOSETS_JOBID`` (darshan-runtime's
documentation, "non-MPI" and its table of environment variables).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError

LIBRARY = Path("lib") / "libdarshan.so"
"""The library to preload, under the install's prefix."""
JOB_ID_VARIABLE = "IOSETS_JOBID"
"""The job id of every process of a job (configure's ``--with-jobid-env``); a number."""
LOG_DIR_VARIABLE = "DARSHAN_LOG_DIR"
"""The folder logs are written to (configure's ``--with-log-path-by-env``)."""
DEFAULT_EXCLUSIONS = (
    "/etc/",
    "/dev/",
    "/usr/",
    "/bin/",
    "/boot/",
    "/lib/",
    "/opt/",
    "/sbin/",
    "/sys/",
    "/proc/",
    "/var/",
)
"""Darshan's default path exclusions (darshan-config.c, ``darshan_path_exclusions``): files under them are not
instrumented; ``DARSHAN_EXCLUDE_DIRS`` replaces the list."""


def darshan_job_id(job: int) -> str:
    """The Darshan job id of the workload's job number ``job`` (0, 1, ...) in its run's log folder: ``job + 1``."""
    return str(job + 1)


def exclusions_for(folder: str | os.PathLike) -> str:
    """``DARSHAN_EXCLUDE_DIRS``: Darshan's default exclusions but those holding ``folder`` (``/var/`` for a run in
    ``/var/tmp``), so that the run's files are instrumented; ``none`` when none is left."""
    path = f"{Path(folder).resolve()}/"
    kept = [prefix for prefix in DEFAULT_EXCLUSIONS if not path.startswith(prefix)]
    return ",".join(kept) or "none"


@dataclass(frozen=True)
class DarshanRuntime:
    """A darshan-runtime install: ``prefix`` holds :data:`LIBRARY`."""

    prefix: Path

    @property
    def library(self) -> Path:
        """The library the programs preload."""
        return self.prefix / LIBRARY

    def wrap(self, command: list[str], *, job_id: str, logs: Path, data: Path) -> list[str]:
        """``command`` run through ``env`` with the library preloaded, DXT on, the job's id and its logs in ``logs``;
        ``data`` (the folder the program writes) is instrumented even under one of Darshan's default exclusions."""
        settings = {
            "LD_PRELOAD": str(self.library),
            "DARSHAN_ENABLE_NONMPI": "1",
            "DXT_ENABLE_IO_TRACE": "1",
            "DARSHAN_EXCLUDE_DIRS": exclusions_for(data),
            LOG_DIR_VARIABLE: str(logs),
            JOB_ID_VARIABLE: job_id,
        }
        return ["env", *(f"{name}={value}" for name, value in settings.items()), *command]


def find_darshan(prefix: str | os.PathLike) -> DarshanRuntime:
    """The darshan-runtime install at ``prefix``; InputError naming the missing library and how to build one."""
    runtime = DarshanRuntime(Path(prefix).resolve())
    if not runtime.library.is_file():
        raise InputError(
            f"--darshan: no darshan-runtime at {prefix} ({runtime.library} is missing); build one from upstream "
            "darshan 3.5.0 without MPI (docs/guides/validate.md, 'Darshan logs of the runs')"
        )
    return runtime
