"""The program a user would name, from the command line Darshan recorded.

For an interpreter (python, Rscript, julia, java, perl, ...; also run through ``env``) that is
the script or module it runs, not the interpreter: every Python job would otherwise be "python".
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass

__all__ = ["app_name"]

_MARKS = re.compile(r"<TRUNCATED>\s*$|(?<=\S)\s+<unknown args>\s*$")  # what Darshan appends to a cut or argless line


@dataclass(frozen=True)
class _Interpreter:
    """How an interpreter's command line names the program it runs."""

    takes_value: frozenset = frozenset()  # options whose value is the next word (or the rest of the word)
    inline_code: frozenset = frozenset()  # options that run code from the command line: "<exe> <option>"
    program: frozenset = frozenset()  # options whose value is the program (a module, a jar, a file)
    bundled: bool = False  # getopt short options: they combine ("-uc", "-ne") and take values attached ("-t4")
    skip: frozenset = frozenset()  # words before the program that are not options ("R CMD BATCH x.R")


def _opts(*names: str) -> frozenset:
    return frozenset(names)


_PYTHON = _Interpreter(_opts("-X", "-W", "--check-hash-based-pycs"), _opts("-c"), _opts("-m"), bundled=True)
_INTERPRETERS = (
    (re.compile(r"(python|pypy)(\d+(\.\d+)*)?"), _PYTHON),
    (re.compile(r"Rscript"), _Interpreter(inline_code=_opts("-e"))),
    (
        re.compile(r"R"),
        _Interpreter(inline_code=_opts("-e"), program=_opts("-f", "--file"), skip=_opts("CMD", "BATCH")),
    ),
    (
        re.compile(r"julia(-\d+(\.\d+)*)?"),
        _Interpreter(
            _opts("-t", "--threads", "-p", "--procs", "-J", "--sysimage", "-H", "--home", "-L", "--load", "-C"),
            _opts("-e", "-E", "--eval", "--print"),
            bundled=True,
        ),
    ),
    (
        re.compile(r"java"),
        _Interpreter(
            _opts("-cp", "-classpath", "--class-path", "-p", "--module-path", "--add-modules", "--add-opens"),
            program=_opts("-jar", "-m", "--module"),
        ),
    ),
    (re.compile(r"perl(\d+(\.\d+)*)?"), _Interpreter(_opts("-I", "-M", "-m"), _opts("-e", "-E"), bundled=True)),
    (re.compile(r"ruby(\d+(\.\d+)*)?"), _Interpreter(_opts("-I", "-r"), _opts("-e"), bundled=True)),
    (
        re.compile(r"node(js)?"),
        _Interpreter(_opts("-r", "--require", "--import"), _opts("-e", "--eval", "-p", "--print")),
    ),
)
_FILE_OPTIONS = _opts("-jar", "-f", "--file")  # program options whose value is a path (others: a module name)
_ENV_VALUE_OPTIONS = _opts("-u", "--unset", "-C", "--chdir", "-S", "--split-string")


def _words(command_line: str) -> list[str]:
    """Shell words of a command line; a whitespace split without quotes when they do not balance (cut short)."""
    try:
        return shlex.split(command_line)
    except ValueError:
        return [w.strip("'\"") for w in command_line.split()]


def _skip_env(words: list[str]) -> list[str]:
    """The command ``env`` runs: past its options and ``NAME=value`` assignments."""
    i = 1
    while i < len(words) and (words[i].startswith("-") or "=" in words[i]):
        if words[i] in _ENV_VALUE_OPTIONS:
            i += 1
        i += 1
    return words[i:]


def _option(word: str, spec: _Interpreter) -> tuple[str, str | None]:
    """The option a word starts with and its attached value (None: the value, if any, is the next word)."""
    if word.startswith("--"):
        name, eq, value = word.partition("=")
        return name, value if eq else None
    if spec.bundled:  # "-uc", "-t4": flags up to the first that takes something, the rest of the word its value
        for k in range(1, len(word)):
            flag = f"-{word[k]}"
            if flag in spec.takes_value | spec.inline_code | spec.program:
                return flag, word[k + 1 :] or None
    return word, None


def _program(exe: str, spec: _Interpreter, args: list[str]) -> str:
    """What ``exe`` runs given its arguments: a script's basename, a module, ``"<exe> -c"``, else ``exe``."""
    i = 0
    while i < len(args):
        word = args[i]
        if word == "--" and i + 1 < len(args):
            return os.path.basename(args[i + 1])
        if word in spec.skip:
            i += 1
            continue
        if not word.startswith("-"):
            return os.path.basename(word)
        flag, value = _option(word, spec)
        if flag in spec.inline_code:
            return f"{exe} {flag}"
        if value is None and flag in spec.takes_value | spec.program:
            i += 1
            value = args[i] if i < len(args) else ""
        if flag in spec.program:
            program = value or ""
            return (os.path.basename(program) if flag in _FILE_OPTIONS else program) or exe
        i += 1
    return exe


def app_name(command_line: str) -> str:
    """The program a user would name from a command line Darshan recorded (never fails).

    Parameters
    ----------
    command_line : str
        The executable and its arguments, possibly cut short by Darshan (``<TRUNCATED>``) or
        without arguments (``<unknown args>``).

    Returns
    -------
    str
        For interpreters the script's basename, a Python module (``-m pkg.mod``), a jar or
        Java main class, or ``"<interpreter> -c"`` / ``"-e"`` for inline code; else the
        executable's basename; ``""`` for an empty command line.

    Examples
    --------
    >>> app_name("/usr/bin/python3 -u /home/u/dlio/main.py workload=unet3d")
    'main.py'
    >>> app_name("/opt/app/bin/lmp -in in.lj")
    'lmp'
    """
    words = _words(_MARKS.sub("", command_line))
    if words and os.path.basename(words[0]) == "env":
        words = _skip_env(words)
    if not words:
        return ""
    exe = os.path.basename(words[0].rstrip("/")) or words[0]
    for pattern, spec in _INTERPRETERS:
        if pattern.fullmatch(exe):
            return _program(exe, spec, words[1:])
    return exe
