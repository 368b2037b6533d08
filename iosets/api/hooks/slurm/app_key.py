"""A Slurm job's app key: the program its batch script launches, named by the analyzer's ``app_name`` rule.

Standard library only (slurmctld's ``python3``). Darshan rows name their app with
``app_name`` (``iosets/analyzer/_ingest/_app_name.py``) applied to the executable's command
line: ``lmp`` for ``/opt/lammps/bin/lmp -in in.lj``, ``train.py`` for ``python3 train.py``.
The hooks name a Slurm job the same way, from what Slurm's job record holds:

1. the batch script (``job_desc.script`` at submit, ``scontrol write batch_script JOB -`` in
   the prolog and epilog; ``sbatch --wrap`` jobs have one too): the first command that a
   launcher (``srun``, ``mpirun``, ``mpiexec``...) starts, past the launcher's options; else the
   first command that is not shell setup (``cd``, ``export``, ``module``, ``source``...);
2. else, for a job without a script, its command line: the program it launches (``mpirun -np 8
   ./ior`` is ``ior``), read as Darshan reads it (Flux: ``flux run``'s command; PBS: ``qsub --``'s
   executable and arguments); Slurm keeps only the executable of ``srun``/``salloc`` jobs
   (``Command=`` holds no argument: ``srun python3 x.py`` is ``python3``);
3. else the job's name, which the user chooses freely: the only key that matches by luck.

A launcher is ``srun``, ``mpirun``... (:data:`LAUNCHERS`) or ``flux run``/``submit``/``bulksubmit``
(a Flux batch script launches its program so).

``job_submit.lua`` holds the same rule in Lua (tests hold the two to the same answers).
Limits: the script is read, not run, and only its first 64 KiB: a program named by a variable
(``srun $EXE``) or built in a loop or a function is skipped; a here-document's lines are
read as commands; options of a launcher that this file does not list as flags are taken to
have a value; ``srun bash -c '...'`` is ``bash``.
"""

from __future__ import annotations

import importlib.util
import re
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent
LAUNCHERS = frozenset({"srun", "mpirun", "mpiexec", "mpiexec.hydra", "orterun", "prterun", "aprun", "jsrun", "ibrun"})
LAUNCHER_FLAGS = frozenset(
    {
        *("-l", "--label", "-K", "--kill-on-bad-exit", "-O", "--overcommit", "-Q", "--quiet", "-q", "-u"),
        *("--unbuffered", "-v", "--verbose", "-X", "--disable-status", "-Z", "--no-allocate", "-E"),
        *("--preserve-env", "-H", "--hold", "-I", "--immediate", "-k", "--no-kill", "-s", "--oversubscribe"),
        *("--exclusive", "--exact", "--overlap", "--pty", "--spread-job", "--use-min-nodes", "--contiguous"),
        *("--test-only", "--whole", "-oversubscribe", "--nooversubscribe", "-nooversubscribe"),
        *("--allow-run-as-root", "--report-bindings", "-report-bindings", "--display-map", "--tag-output"),
        *("-tag-output", "--timestamp-output", "--merge-stderr-to-stdout", "--noprefix", "--use-hwthread-cpus"),
        *("--bynode", "-bynode", "--byslot", "-byslot", "-genvall", "-genvnone", "-envall", "-envnone"),
        *("-prepend-rank", "-verbose", "--label-io", "--wait", "--watch", "--progress", "--jps", "--dry-run"),
    }
)
"""Launcher options that take no value; any other option without ``=`` takes the next word."""
FLUX_LAUNCHES = frozenset({"run", "submit", "bulksubmit"})
"""``flux`` subcommands that launch a program: ``flux run -N 2 ./lmp`` launches ``./lmp`` (a Flux batch script)."""
SETUP = frozenset(
    {
        *("cd", "pushd", "popd", "export", "unset", "set", "shopt", "module", "ml", "source", ".", "ulimit"),
        *("umask", "alias", "echo", "printf", "trap", "wait", "true", "false", ":", "mkdir", "rm", "cp", "mv"),
        *("ln", "touch", "cat", "date", "hostname", "exit", "return", "local", "declare", "typeset"),
        *("readonly", "let", "eval", "test", "[", "[[", "spack", "conda"),
    }
)
"""Commands of a script's setup: never the app."""
PREFIXES = frozenset({"do", "then", "else", "time", "exec", "nohup", "command", "builtin", "{", "!"})
"""Words before a command that are not the command."""
CONSTRUCTS = frozenset({"if", "elif", "while", "until", "for", "case", "select", "function", "fi", "done", "esac", "}"})
"""Shell words that start a construct this file does not read: the command is skipped."""
SCRIPT_MAX = 64 << 10
"""Bytes of a batch script read for its key (job_submit.lua's cost inside slurmctld stays bounded)."""
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_SEPARATORS = ";&|\n"


def script_words(script: str) -> list[list[str]]:
    """The simple commands of a shell script as word lists (quotes and escapes resolved, comments dropped).

    Only the first :data:`SCRIPT_MAX` bytes are read. A newline, ``;``, ``&`` or ``|``
    outside quotes ends a command; a backslash before a newline joins the lines; ``#`` at the
    start of a word comments out the rest of its line.

    >>> script_words("#!/bin/sh\\nmodule load x; srun -n 4 'my app' \\\\\\n  --in a.in # run\\n")
    [['module', 'load', 'x'], ['srun', '-n', '4', 'my app', '--in', 'a.in']]
    """
    script = script.encode()[:SCRIPT_MAX].decode("utf-8", "ignore")  # bytes, as Lua counts them
    commands: list[list[str]] = []
    words: list[str] = []
    word: list[str] | None = None  # the pieces of the word being read; None between words
    i, n = 0, len(script)
    while i < n:
        c = script[i]
        if c == "\\" and i + 1 < n:
            if script[i + 1] != "\n":  # a backslash-newline joins two lines, and starts no word
                word = [] if word is None else word
                word.append(script[i + 1])
            i += 2
        elif c == "'":
            end = script.find("'", i + 1)
            end = n if end < 0 else end
            word = [] if word is None else word
            word.append(script[i + 1 : end])
            i = end + 1
        elif c == '"':
            i += 1
            word = [] if word is None else word
            while i < n and script[i] != '"':
                if script[i] == "\\" and i + 1 < n and script[i + 1] in '"\\$`':
                    i += 1
                word.append(script[i])
                i += 1
            i += 1
        elif c == "#" and word is None:
            end = script.find("\n", i)
            i = n if end < 0 else end
        elif c in " \t" or c in _SEPARATORS:
            if word is not None:
                words.append("".join(word))
                word = None
            if c in _SEPARATORS and words:
                commands.append(words)
                words = []
            i += 1
        else:
            word = [] if word is None else word
            word.append(c)
            i += 1
    if word is not None:
        words.append("".join(word))
    if words:
        commands.append(words)
    return commands


def launched(words: list[str]) -> tuple[bool, list[str]]:
    """``(by a launcher, the program's words)`` of a simple command; the words are empty when it names none.

    >>> launched(["FOO=1", "srun", "-n", "4", "--mpi=pmix", "-l", "./lmp", "-in", "in.lj"])
    (True, ['./lmp', '-in', 'in.lj'])
    """
    i = 0
    while i < len(words) and (words[i] in PREFIXES or _ASSIGNMENT.match(words[i])):
        i += 1
    if i == len(words) or words[i] in CONSTRUCTS:
        return False, []
    if words[i].rsplit("/", 1)[-1] == "flux" and i + 1 < len(words) and words[i + 1] in FLUX_LAUNCHES:
        i += 1  # flux run: a launcher of two words
    elif words[i].rsplit("/", 1)[-1] not in LAUNCHERS:
        return False, _program_words(words[i:])
    i += 1
    while i < len(words) and words[i].startswith("-"):
        option = words[i]
        i += 1
        if option == "--":
            break
        short_with_value = option[:2] != "--" and len(option) > 2 and option[2:].isdigit()  # -n4, -N2
        if "=" not in option and option not in LAUNCHER_FLAGS and not short_with_value:
            i += 1  # the option's value
    return True, _program_words(words[i:])


def _program_words(words: list[str]) -> list[str]:
    """``words`` when they name a program this file can read (not a variable nor a substitution), else []."""
    if not words or "$" in words[0] or "`" in words[0]:
        return []
    return words


def batch_command(script: str) -> list[str]:
    """The words of the command a batch script runs as its app (see the module's rule); [] when none."""
    first: list[str] = []
    for words in script_words(script):
        by_launcher, program = launched(words)
        if by_launcher and program:
            return program
        if program and not first and program[0] not in SETUP:
            first = program
    return first


def app_key(*, script: str | None = None, command: str | None = None, argv: Sequence[str] = (), name: str = "") -> str:
    """The job's app key: from its batch ``script``, else its command line (``argv``: Flux, PBS), else its
    ``command`` (the executable alone: Slurm), else ``name``.

    >>> app_key(script="#!/bin/bash\\n#SBATCH -J x\\ncd run\\nsrun -n 4 python3 -u /home/u/train.py --lr 1")
    'train.py'
    >>> app_key(argv=["mpirun", "-np", "8", "python3", "train.py"], name="x")
    'train.py'
    """
    app_name = load_app_name()
    if script:
        words = batch_command(script)
        if words:
            return app_name(shlex.join(words)) or name
    if argv:
        _, words = launched(list(argv))
        return app_name(shlex.join(words or argv)) or name
    if command and command != "(null)":
        return app_name(shlex.quote(command)) or name
    return name


def load_app_name():
    """The analyzer's ``app_name``: ``app_name.py`` beside this file, else the package's ``_app_name.py``."""
    for path in (HERE / "app_name.py", HERE.parents[2] / "analyzer" / "_ingest" / "_app_name.py"):
        if path.is_file():
            return _load(path, "iosets_app_name").app_name
    raise FileNotFoundError(f"no app_name.py beside {HERE} nor iosets/analyzer/_ingest/_app_name.py")


def _load(path: Path, name: str) -> ModuleType:
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # a dataclass looks its module up by name
    spec.loader.exec_module(module)
    return module
