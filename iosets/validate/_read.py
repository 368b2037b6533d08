"""Read a ``validation.json`` back (``iosets validate -o``), every value checked, errors naming the file and the key."""

from __future__ import annotations

import math
import os
import reprlib
from collections.abc import Mapping
from numbers import Real
from pathlib import Path
from typing import Any

from .._io import read_json
from ..errors import InputError
from ..workload import Workload
from ._log_check import DarshanValidation
from ._validate import METRICS, POLICIES, SIMULATED_POLICY, PolicyValidation, Validation

MAX_FILE_BYTES = 16 << 20
"""Largest validation file read (16 MiB): the Fig. 4 workload of 8 jobs writes about 12 kB, 100 jobs of 1 000
phases each about 4 MB."""
MAX_JOBS = 10_000
"""Most jobs of the file's workload (each job of a validation is a program run on one node)."""
MAX_RUNS = 10_000
"""Most repetitions of a policy."""

_MISSING = object()
_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = 40
_shown = _REPR.repr  # a bad value in a message, however large or deep


def read_validation(path: str | os.PathLike) -> Validation:
    """Read the result of ``iosets validate -o validation.json``.

    Parameters
    ----------
    path : path
        The JSON file: ``{"workload": {...}, "bandwidth": B, "policies": {policy: {"measured": {metric:
        [one value per run]}, "simulated": {metric: value}}}}``.

    Returns
    -------
    Validation
        As :func:`validate` returned it (``throttle`` is None: the file does not hold it).

    Raises
    ------
    InputError
        The file cannot be read, is larger than 16 MiB or not JSON, or breaks the shape (a missing key, a value
        that is not a finite number >= 0 or null, a policy not among :data:`POLICIES`, more than
        :data:`MAX_RUNS` runs or :data:`MAX_JOBS` jobs): the message names the file and the key
        (``validation.json: policies.set-10.measured.utilization[2]: ...``).

    Examples
    --------
    >>> import tempfile
    >>> from iosets.replay import PhaseMetrics
    >>> from iosets.validate import PolicyValidation, Validation, make_fig4_workload
    >>> runs = {"utilization": [0.81, 0.82], "io_slowdown": [1.5, 1.6], "max_stretch": [1.14, 1.2]}
    >>> outcome = PolicyValidation("set-10", "set-10", runs, PhaseMetrics(0.82, 1.5, 1.14))
    >>> validation = Validation(make_fig4_workload(2, horizon=10.0, bandwidth=1e8), 1e8, {"set-10": outcome})
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     read = read_validation(validation.write(Path(folder) / "validation.json"))
    >>> read.policies["set-10"].within("max_stretch"), read.policies["set-10"].meets_criterion()
    (0.5, False)
    """
    path = Path(path)
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if size > MAX_FILE_BYTES:
        raise InputError(f"{path}: {size:,} bytes; a validation file holds at most {MAX_FILE_BYTES:,}")
    data = read_json(path)
    return validation_from_dict(data, source=str(path))


def validation_from_dict(data: Any, *, source: str = "validation") -> Validation:
    """A :class:`Validation` from its JSON form (:meth:`Validation.to_dict`), errors naming ``source`` and the key."""
    top = _object(data, source, "")
    workload_data = _object(_key(top, "workload", source, ""), source, "workload")
    jobs = workload_data.get("jobs")
    if isinstance(jobs, list) and len(jobs) > MAX_JOBS:
        raise InputError(f"{source}: workload.jobs: {len(jobs):,} jobs; a validation holds at most {MAX_JOBS:,}")
    workload = Workload.from_dict(workload_data, source=f"{source}: workload")
    bandwidth = _number(_key(top, "bandwidth", source, ""), source, "bandwidth", positive=True)
    policies = _object(_key(top, "policies", source, ""), source, "policies")
    if not policies:
        raise InputError(f"{source}: policies: expected at least one of {', '.join(POLICIES)}, got none")
    results = {}
    for policy, entry in policies.items():
        if policy not in POLICIES:
            raise InputError(
                f"{source}: policies: unknown policy {_shown(policy)}; expected one of {', '.join(POLICIES)}"
            )
        results[policy] = _policy(policy, entry, source)
    return Validation(workload, bandwidth, results, darshan=_darshan(top.get("darshan"), source))


def _darshan(data: Any, source: str) -> DarshanValidation | None:
    """The ``darshan`` part written with darshan-runtime (None without it), its defects named."""
    if data is None:
        return None
    try:
        return DarshanValidation.from_dict(data)
    except (KeyError, TypeError, ValueError, AttributeError, InputError) as exc:
        raise InputError(
            f"{source}: darshan: not what validate --darshan writes ({type(exc).__name__}: {exc})"
        ) from None


def _policy(policy: str, entry: Any, source: str) -> PolicyValidation:
    """One policy's measured runs and simulated metrics."""
    from ..replay import PhaseMetrics

    where = f"policies.{policy}"
    entry = _object(entry, source, where)
    measured_data = _object(_key(entry, "measured", source, where), source, f"{where}.measured")
    measured = {metric: _runs(measured_data, metric, source, f"{where}.measured") for metric in METRICS}
    counts = {metric: len(values) for metric, values in measured.items()}
    if len(set(counts.values())) > 1:
        shown = ", ".join(f"{metric} {n}" for metric, n in counts.items())
        raise InputError(f"{source}: {where}.measured: expected one value per run in each metric, got {shown}")
    simulated_data = _object(_key(entry, "simulated", source, where), source, f"{where}.simulated")
    where = f"{where}.simulated"
    value = {m: _value(_key(simulated_data, m, source, where), source, f"{where}.{m}") for m in METRICS}
    simulated = PhaseMetrics(value["utilization"], value["io_slowdown"], value["max_stretch"])
    return PolicyValidation(policy, SIMULATED_POLICY.get(policy, policy), measured, simulated)


def _runs(measured: dict, metric: str, source: str, where: str) -> list[float | None]:
    """A metric's values, one per run (1 to :data:`MAX_RUNS`), each a number >= 0 or null."""
    values = _key(measured, metric, source, where)
    where = f"{where}.{metric}"
    if not isinstance(values, list):
        raise InputError(f"{source}: {where}: expected a list of one value per run, got {_shown(values)}")
    if not 1 <= len(values) <= MAX_RUNS:
        raise InputError(f"{source}: {where}: expected 1 to {MAX_RUNS:,} runs, got {len(values):,}")
    return [_value(value, source, f"{where}[{i}]") for i, value in enumerate(values)]


def _key(mapping: dict, key: str, source: str, where: str) -> Any:
    """``mapping[key]``; an InputError naming the missing key."""
    value = mapping.get(key, _MISSING)
    if value is _MISSING:
        raise InputError(f"{source}: {where + '.' if where else ''}{key}: missing")
    return value


def _object(value: Any, source: str, where: str) -> dict:
    if not isinstance(value, Mapping):
        raise InputError(f"{source}: {where + ': ' if where else ''}expected a JSON object, got {_shown(value)}")
    return dict(value)


def _value(value: Any, source: str, where: str) -> float | None:
    """A metric's value: a finite number >= 0, or null (a run or a replay that gave none)."""
    return None if value is None else _number(value, source, where, positive=False)


def _number(value: Any, source: str, where: str, *, positive: bool) -> float:
    """``value`` as a float if it is a finite number >= 0 (> 0 when ``positive``)."""
    number = math.nan
    if isinstance(value, Real) and not isinstance(value, bool):
        try:
            number = float(value)
        except OverflowError:  # an integer beyond float64
            number = math.inf
    if not math.isfinite(number) or number < 0 or (positive and number == 0):
        bound = "> 0" if positive else ">= 0"
        nullable = "" if positive else " or null"
        raise InputError(f"{source}: {where}: expected a finite number {bound}{nullable}, got {_shown(value)}")
    return number
