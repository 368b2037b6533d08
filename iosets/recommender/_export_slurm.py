"""Slurm exports: the recommendation as a JSON document and as a Lua table that ``job_submit.lua`` loads locally."""

import json
import math
import time
import warnings

import polars as pl

from .._version import __version__
from ..errors import InputError
from ._recommend import evidence, set_summary
from ._recommender import Recommender

DOCUMENT_VERSION = 1
"""Version of the JSON/Lua document layout; raised when a field changes meaning."""

_JOB_FIELDS = (
    "user",
    "app",
    "w_iter",
    "set",
    "priority",
    "conservative",
    "wfq_weight",
    "rbfq_reservation",
    "rbfq_weight",
    "rbfq_limit",
)
_LUA_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def recommendation_document(
    recommended: pl.DataFrame, *, generated: str, mapping: str | None = None, recommender: Recommender | None = None
) -> dict:
    """The recommendation as plain data, keyed for look-ups at submit time.

    ``users[user][app]`` holds what ``recommender.predict_one(app=app, user=user)``
    answers (set, priority, conservative) for every (user, app) of ``recommended``;
    ``apps[app]`` what it answers for a user the history has not seen running that app;
    ``default`` is the conservative set, for apps never seen. ``n_jobs`` counts the
    matching jobs of ``recommended``, and ``jobs`` is keyed by job id.

    Parameters
    ----------
    recommended : polars.DataFrame
        Output of :func:`recommend` or :meth:`Recommender.predict` (with ``app``, ``user``
        and ``start``).
    mapping : str, default=None
        The mapping's name, recorded as ``policy`` (the field's version-1 name); also the
        mapping of the recommender fitted on ``recommended`` when none is given.
    recommender : Recommender, default=None
        Fitted: its answers are exported; not fitted: fitted on ``recommended``. Either
        way it must give ``recommended``'s jobs their sets; by default
        ``Recommender(mapping=mapping or "set-10")``.
    """
    fitted = _recommender_for(recommended, mapping, recommender)
    summary = set_summary(recommended)
    conservative = fitted.mapping_.conservative_set
    return {
        "version": DOCUMENT_VERSION,
        "generated": generated,
        "iosets_version": __version__,
        "policy": mapping if mapping is not None or recommender is None else recommender.mapping,
        "default": {
            "set": conservative,
            "priority": float(fitted.mapping_.priorities([conservative])[0]),
            "conservative": True,
        },
        "sets": [_plain_row(row) for row in summary.iter_rows(named=True)],
        "apps": _lookup(recommended, fitted, ["app"]),
        "users": _lookup(recommended, fitted, ["user", "app"]),
        "jobs": _jobs(recommended),
    }


def _recommender_for(recommended: pl.DataFrame, mapping: str | None, recommender: Recommender | None) -> Recommender:
    """The fitted recommender whose answers the document holds, checked against ``recommended``'s sets."""
    if recommender is None:
        recommender = Recommender(mapping=mapping or "set-10")
    elif mapping is not None and mapping != recommender.mapping:
        raise InputError(f"mapping {mapping!r} differs from the recommender's {recommender.mapping!r}")
    if not hasattr(recommender, "mapping_"):
        with warnings.catch_warnings():  # its weights are not exported: the document's come from `recommended`
            warnings.simplefilter("ignore", UserWarning)
            recommender = Recommender(**recommender.get_params()).fit(recommended)
    sets, conservative = recommender.mapping_.classify(*evidence(recommended))
    differs = (sets != recommended["set"].to_numpy()) | (conservative != recommended["conservative"].to_numpy())
    if differs.any():
        row = int(differs.argmax())
        raise InputError(
            f"recommendation: job {recommended['job_id'][row]!r} is in set {recommended['set'][row]}, but mapping "
            f"{recommender.mapping!r} as fitted puts it in set {sets[row]}: export with the mapping (or the "
            "recommender) that made the recommendation"
        )
    return recommender


def _jobs(recommended: pl.DataFrame) -> dict:
    rows = recommended.select(pl.col("job_id").cast(pl.String), *_JOB_FIELDS).iter_rows()
    return {row[0]: _plain_row(dict(zip(_JOB_FIELDS, row[1:], strict=True))) for row in rows}


def _lookup(recommended: pl.DataFrame, recommender: Recommender, keys: list[str]) -> dict:
    """Nested dict keys -> {set, priority, n_jobs, conservative} (see :func:`recommendation_document`)."""
    counts = recommended.drop_nulls(keys).group_by(pl.col(keys).cast(pl.String)).agg(pl.len().alias("n_jobs"))
    table: dict = {}
    for row in counts.sort(keys).iter_rows(named=True):
        answer = recommender._answer(row["app"], row.get("user"))
        node = table
        for key in keys[:-1]:
            node = node.setdefault(row[key], {})
        node[row[keys[-1]]] = {
            "set": answer["set"],
            "priority": answer["priority"],
            "n_jobs": row["n_jobs"],
            "conservative": answer["conservative"],
        }
    return table


def _plain_row(row: dict) -> dict:
    """JSON-ready values: NaN becomes None."""
    return {key: None if isinstance(value, float) and math.isnan(value) else value for key, value in row.items()}


def render_json(
    recommended: pl.DataFrame, *, generated: str, mapping: str | None = None, recommender: Recommender | None = None
) -> tuple[str]:
    """The document of :func:`recommendation_document` as JSON."""
    document = recommendation_document(recommended, generated=generated, mapping=mapping, recommender=recommender)
    return (json.dumps(document, indent=1, allow_nan=False) + "\n",)


def render_lua(
    recommended: pl.DataFrame, *, generated: str, mapping: str | None = None, recommender: Recommender | None = None
) -> tuple[str]:
    """The same document as a Lua chunk ``return {...}`` for ``dofile`` (null fields are left out)."""
    document = recommendation_document(recommended, generated=generated, mapping=mapping, recommender=recommender)
    header = [
        f"-- IO-SETS recommendation for Slurm's job_submit.lua, generated by iosets {__version__} on {generated}.",
        "-- Load it with dofile(path): apps[name], users[uid][name] and default give a new job's set.",
    ]
    return ("\n".join(header) + "\nreturn " + lua_value(document) + "\n",)


def default_lua_document(default: dict, *, mapping: str) -> str:
    """The Lua document of a history with no w_iter yet: ``default`` for every job, no set, app or user.

    Parameters
    ----------
    default : dict
        The one default answer: ``set``, ``priority`` and ``conservative``.
    mapping : str
        The policy's mapping, named in the document.
    """
    generated = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    document = {"version": DOCUMENT_VERSION, "generated": generated, "iosets_version": __version__}
    document |= {"policy": mapping, "default": default, "sets": [], "apps": {}, "users": {}, "jobs": {}}
    header = f"-- IO-SETS recommendation for Slurm's job_submit.lua, generated by iosets {__version__} on {generated}."
    note = "-- No stored job has a w_iter yet: every job gets the default answer."
    return f"{header}\n{note}\nreturn {lua_value(document)}\n"


def lua_value(value, indent: int = 0) -> str:
    """A Lua literal for JSON-like data: tables with ``["key"] =`` fields, escaped strings."""
    if value is None:
        return "nil"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InputError(f"no Lua literal for {value!r}")
        return repr(value)
    if isinstance(value, str):
        return lua_string(value)
    pad = " " * (indent + 1)
    if isinstance(value, dict):
        items = [f"{pad}[{lua_string(str(k))}] = {lua_value(v, indent + 1)}" for k, v in value.items() if v is not None]
    else:
        items = [f"{pad}{lua_value(v, indent + 1)}" for v in value]
    return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}" if items else "{}"


def lua_string(text: str) -> str:
    """A double-quoted Lua string; control characters as ``\\ddd``, other characters as UTF-8."""
    out = (_LUA_ESCAPES.get(c) or (f"\\{ord(c):03d}" if ord(c) < 32 or ord(c) == 127 else c) for c in text)
    return '"' + "".join(out) + '"'
