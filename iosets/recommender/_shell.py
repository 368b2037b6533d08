"""Text in the generated shell scripts: quoted words, and job ids allowed where they become names."""

import re
import shlex

from ..errors import InputError

_JOB_ID = re.compile(r"[A-Za-z0-9_.-]+")


def shell_word(text: str, name: str) -> str:
    """``text`` as one ``sh`` word (``shlex.quote``); an InputError naming ``name`` if it holds a NUL byte."""
    if "\0" in text:
        raise InputError(f"{name} cannot hold a NUL byte, got {text!r}")
    return shlex.quote(text)


def check_job_ids(job_ids: list, where: str) -> list[str]:
    """``job_ids`` if each is letters, digits, ``_``, ``.`` or ``-``; else an InputError naming the first other one."""
    for job in job_ids:
        if not isinstance(job, str) or not _JOB_ID.fullmatch(job):
            raise InputError(f"job id {job!r} cannot go into {where}: job ids must be letters, digits, '_', '.' or '-'")
    return job_ids
