"""`export`: write a recommendation as files an administrator applies (AGIOS, Lustre TBF, cgroup v2, Slurm)."""

import inspect
import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from .._io import atomic_path
from .._validation import check_choice
from ..errors import InputError
from ..schemas import RECOMMENDED_JOBS
from ._export_agios import render_agios
from ._export_cgroup import render_cgroup
from ._export_slurm import render_json, render_lua
from ._export_tbf import render_tbf
from ._mappings import renamed_policy

EXPORT_FORMATS = ("agios", "tbf", "cgroup", "json", "lua")
"""Export formats: AGIOS WFQ, Lustre NRS TBF, cgroup v2 io.weight, JSON and Lua for Slurm's job_submit.lua."""

_FORMATS: dict[str, tuple[Callable[..., tuple[str, ...]], tuple[str, ...], int, tuple[str, ...]]] = {
    # format: (renderer, file names, file mode, columns needed besides the recommendation's)
    "agios": (render_agios, ("agios.conf", "wfq.conf"), 0o644, ()),
    "tbf": (render_tbf, ("iosets-tbf.sh",), 0o755, ("job_id",)),
    "cgroup": (render_cgroup, ("iosets-io-weight.sh",), 0o755, ("job_id",)),
    "json": (render_json, ("iosets.json",), 0o644, ("job_id", "user", "app", "w_iter", "start")),
    "lua": (render_lua, ("iosets.lua",), 0o640, ("job_id", "user", "app", "w_iter", "start")),
}


def render_export(
    recommended: pl.DataFrame, fmt: str, *, generated: datetime | None = None, **options
) -> dict[str, str]:
    """The files of ``recommended`` in format ``fmt`` as text, without writing them.

    Parameters
    ----------
    recommended : polars.DataFrame
        Output of :func:`recommend` or :meth:`Recommender.predict`, as :func:`export` takes it.
    fmt : str
        One of :data:`EXPORT_FORMATS`, with the options :func:`export` lists; ``agios`` needs
        ``wfq_path`` (where ``wfq.conf`` will be installed), since no file is written.
    generated : datetime.datetime, default=None
        The date the files' headers give, shown in UTC (a naive date is local time); default: now.

    Returns
    -------
    dict of str to str
        Default file name -> text, in the order :func:`export` writes them (``agios``:
        ``agios.conf`` then ``wfq.conf``).

    Examples
    --------
    >>> from iosets.recommender import recommend
    >>> rec = recommend(pl.DataFrame({"job_id": ["a", "b"], "w_iter": [8.0, 95.0]}))
    >>> render_export(rec, "agios", wfq_path="/etc/agios/wfq.conf")["wfq.conf"]
    '10485760\\n1048576\\n'
    """
    check_choice(fmt, "export format", EXPORT_FORMATS)
    render, names, _, columns = _FORMATS[fmt]
    recommended = _check_recommendation(recommended, fmt, columns)
    if "policy" in options and fmt in ("json", "lua"):
        options["mapping"] = renamed_policy(options.pop("mapping", None), options.pop("policy"))
    _check_options(fmt, render, options)
    texts = render(recommended, generated=_date(generated), **options)
    return dict(zip(names, texts, strict=True))


def export(recommended: pl.DataFrame, fmt: str, out: str | os.PathLike, **options) -> list[Path]:
    """Write ``recommended`` in format ``fmt`` (the files :func:`render_export` renders) and return the paths written.

    Parameters
    ----------
    recommended : polars.DataFrame
        Output of :func:`recommend` or :meth:`Recommender.predict`, at least one job
        (checked by :data:`iosets.schemas.RECOMMENDED_JOBS`; ``json``/``lua`` also need
        ``user``, ``app``, ``w_iter`` and ``start``, which the recommender learns from).
    fmt : str
        One of :data:`EXPORT_FORMATS`:

        - ``agios``: ``agios.conf`` selecting WFQ, and ``wfq.conf`` with each set's weight;
          option ``wfq_path`` (where ``wfq.conf`` will be installed; default: the file written).
        - ``tbf``: a script of ``lctl set_param`` TBF rules by jobid; options ``active``
          (job ids running now) and ``rpc_capacity`` (RPC/s) are required, ``target``
          (default ``ost.OSS.ost_io``) and ``default_rate`` are optional (see :func:`tbf_rates`).
        - ``cgroup``: a script writing each job's cgroup v2 ``io.weight`` (see
          :func:`cgroup_weights`); option ``root`` (the parent of the ``job_<id>`` cgroups).
        - ``json`` / ``lua``: the recommendation keyed by app and (user, app) for
          Slurm's ``job_submit.lua``, as a :class:`Recommender` answers them (see
          :func:`recommendation_document`); options ``mapping`` (the mapping's name,
          recorded, and the mapping of the recommender fitted on ``recommended``;
          ``policy`` is its deprecated name) and ``recommender`` (fitted, or to fit).

        Every format also takes ``generated``, the date of the files' headers (see :func:`render_export`).
    out : path
        A directory (existing, or a name without suffix) gets the default file names
        (``agios.conf`` + ``wfq.conf``, ``iosets-tbf.sh``, ``iosets-io-weight.sh``,
        ``iosets.json``, ``iosets.lua``); otherwise the file to write (for ``agios``,
        ``agios.conf``'s path, ``wfq.conf`` beside it). Files are written atomically.

    Returns
    -------
    list of pathlib.Path
        The files written, in the order above.

    Examples
    --------
    >>> import tempfile
    >>> from iosets.recommender import recommend
    >>> rec = recommend(pl.DataFrame({"job_id": ["a", "b"], "w_iter": [8.0, 95.0]}))
    >>> [path.name for path in export(rec, "agios", tempfile.mkdtemp())]
    ['agios.conf', 'wfq.conf']
    """
    check_choice(fmt, "export format", EXPORT_FORMATS)
    _, names, mode, _ = _FORMATS[fmt]
    paths = _paths(Path(out), names)
    if fmt == "agios":
        options.setdefault("wfq_path", str(paths[1].absolute()))
    texts = render_export(recommended, fmt, **options)
    for path, text in zip(paths, texts.values(), strict=True):
        with atomic_path(path) as tmp:
            tmp.write_text(text, encoding="utf-8")
            tmp.chmod(mode)
    return paths


def _date(generated: datetime | None) -> str:
    """``generated`` (default: now) as the headers give it: ``2024-05-01T12:00:00Z``."""
    if generated is None:
        generated = datetime.now(UTC)
    elif not isinstance(generated, datetime):
        raise InputError(f"generated must be a datetime, got {type(generated).__name__} {generated!r}")
    return generated.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _paths(out: Path, names: tuple[str, ...]) -> list[Path]:
    if out.is_dir() or not out.suffix:
        return [out / name for name in names]
    return [out, *(out.parent / name for name in names[1:])]


def _check_recommendation(recommended: pl.DataFrame, fmt: str, columns: tuple[str, ...]) -> pl.DataFrame:
    """``recommended`` checked and typed by :data:`iosets.schemas.RECOMMENDED_JOBS`, with the columns ``fmt`` needs."""
    if not isinstance(recommended, pl.DataFrame):
        raise InputError(f"expected a recommendation (polars DataFrame), got {type(recommended).__name__}")
    missing = [name for name in RECOMMENDED_JOBS.required if name not in recommended.columns]
    if missing:
        raise InputError(f"not a recommendation: missing column(s) {', '.join(missing)} (run recommend first)")
    if recommended.height == 0:
        raise InputError("nothing to export: the recommendation has no job")
    missing = [name for name in columns if name not in recommended.columns]
    if missing:
        raise InputError(f"recommendation: missing column(s) {', '.join(missing)}; the {fmt} export needs them")
    recommended = RECOMMENDED_JOBS.validate(recommended, source="recommendation", fill_optional=False)
    if "job_id" in columns:
        repeated = recommended.filter(pl.col("job_id").is_duplicated())["job_id"].unique(maintain_order=True)
        if repeated.len():
            raise InputError(f"job_id must be unique; repeated: {', '.join(map(str, repeated[:5]))}")
    return recommended


def _check_options(fmt: str, render, options: dict) -> None:
    """Unknown or missing options of a format, named in an InputError."""
    params = list(inspect.signature(render).parameters.values())[1:]
    names = [p.name for p in params if p.name != "generated"]
    unknown = [name for name in options if name not in names]
    if unknown:
        raise InputError(f"unknown option(s) for the {fmt} export: {', '.join(unknown)}; expected {', '.join(names)}")
    needed = [p.name for p in params if p.default is p.empty and p.name != "generated" and p.name not in options]
    if needed:
        raise InputError(f"the {fmt} export needs option(s): {', '.join(needed)}")
