"""Characteristic-time estimates for jobs not seen yet (IO-SETS paper, section VII-B).

Sources, tried in order for each query job:

1. ``'history'``: an EWMA of log10 w_iter over the past jobs of the same
   (app, user) pair when the pair has at least ``min_jobs`` usable jobs, else
   the app's estimate: the median over the app's users of each user's own
   EWMA (and of its confidence), each user one vote however many jobs they
   posted (one job is enough).
2. ``'model'``: a gradient-boosting regressor of log10 w_iter on what is
   known at submit time, for apps with no usable history.
3. ``'none'``: no estimate; the caller maps the job to the conservative set.

Thin evidence buys no estimate: a past job without a w_iter, with a zero
``w_iter_confidence`` or with a ``not_periodic`` code is not used, and a pair
(or an app) the history holds only such jobs of, or jobs the caller calls thin
(a recommender's below its ``min_confidence``), gets no estimate ('none'):
neither the app's EWMA nor the model's, since the most specific evidence the
history has of it says it has no rhythm to rely on.

A source is used only if its confidence reaches ``min_confidence``. Both
confidences estimate the same thing: the probability that the job's w_iter
lies within half a decade of the estimate, i.e. that SET-10 puts it in the
set of the estimate when the estimate sits mid-set.
"""

import math
import re
from typing import Any

import numpy as np
import polars as pl
from threadpoolctl import threadpool_limits

from .._validation import check_count, check_positive
from ..errors import InputError
from ._params import Params, check_fraction
from ._trees import FlatTrees

HISTORY_COLUMNS = ("app", "user", "start", "w_iter")
QUERY_COLUMNS = ("app", "user")
QUERY_FIELDS = ("app", "user", "nprocs", "requested_time")
SOURCES = ("history", "model", "none")
HALF_SET = 0.5  # decades: half a SET-10 set
PRIOR_SD = 0.5  # decades: spread assumed before any dispersion is seen
PRIOR_JOBS = 1.0  # weight of that prior, in jobs
MIN_MODEL_APPS = 5  # distinct apps needed to fit and cross-validate the model
MIN_LEVEL_APPS = 5  # apps a context level needs for its own held-out hit rate


LN10 = math.log(10.0)
"""Polars computes log10(x) as ln(x) / ln(10): one job's features do the same, to the bit (math.log10 differs)."""
_TOKEN = "[a-z]+"  # an app's code name: its first run of letters, lower case


def _hit_probability(sd):
    """P(|N(0, sd)| < HALF_SET), 1 where sd is 0."""
    from scipy.special import erf  # imported on use (at fit): math.erf differs in the last bit for 1 value in 6

    sd = np.asarray(sd, dtype=np.float64)
    with np.errstate(divide="ignore"):
        return erf(HALF_SET / (np.sqrt(2.0) * sd))


def _token(app: pl.Expr) -> pl.Expr:
    """The code name of an app: its first run of letters, lower case (``'LAMMPS_v2'`` -> ``'lammps'``)."""
    return app.str.to_lowercase().str.extract(f"({_TOKEN})", 1)


def _token_of(app: str) -> str | None:
    """:func:`_token` of one app name."""
    found = re.search(_TOKEN, app.lower())
    return found.group(0) if found else None


def query_fields(fields: dict) -> dict[str, Any]:
    """One job's submit-time fields, checked: ``app`` and ``user`` as text, ``nprocs`` and ``requested_time`` > 0.

    Numbers may come as text (``nprocs='64'``); empty or None ones are left out.
    """
    unknown = [k for k in fields if k not in QUERY_FIELDS]
    if unknown:
        raise InputError(f"unknown field(s) {', '.join(unknown)}; expected {', '.join(QUERY_FIELDS)}")
    missing = [k for k in QUERY_COLUMNS if fields.get(k) in (None, "")]
    if missing:
        raise InputError(f"missing field(s) {', '.join(missing)}: expected app=...,user=...")
    query: dict[str, Any] = {"app": str(fields["app"]), "user": str(fields["user"])}
    for key in ("nprocs", "requested_time"):
        if fields.get(key) not in (None, ""):
            try:
                value = float(fields[key])
            except (TypeError, ValueError):
                raise InputError(f"{key}: expected a number, got {fields[key]!r}") from None
            if not value > 0:
                raise InputError(f"{key}: expected a number > 0, got {fields[key]!r}")
            query[key] = value
    return query


def _ewma(jobs: pl.DataFrame, keys: list[str], halflife: float) -> pl.DataFrame:
    """EWMA statistics of ``x`` (log10 w_iter) per group of ``keys``; ``jobs`` is sorted by start.

    A job of age k (k later jobs in its group) gets weight w = c 2^(-k / halflife),
    c its w_iter confidence; d = 2^(-k / halflife) is the decay alone. Then
    m = sum(w x) / sum(w), s2 = sum(w (x - m)^2) / sum(w),
    and n = q sum(w)^2 / sum(w^2): the Kish effective number of jobs times
    q = sum(w) / sum(d), the mean confidence (a job found with confidence c
    counts as c jobs). The spread of a new job is shrunk towards PRIOR_SD
    with PRIOR_JOBS pseudo-jobs and widened by the error of the mean:
    sd^2 = (n s2 + PRIOR_JOBS PRIOR_SD^2) / (n + PRIOR_JOBS) (1 + 1 / n), and
    confidence = P(|N(0, sd)| < HALF_SET), in [0, 1]. It grows with the
    number of consistent jobs and falls as they scatter.
    """
    k = pl.len().over(keys) - 1 - pl.int_range(pl.len()).over(keys)
    d = 0.5 ** (k.cast(pl.Float64) / halflife)
    frame = jobs.with_columns(d=d).with_columns(w=pl.col("d") * pl.col("c"))
    frame = frame.with_columns(m=(pl.col("w") * pl.col("x")).sum().over(keys) / pl.col("w").sum().over(keys))
    stats = frame.group_by(keys).agg(
        n=pl.len(),
        m=pl.col("m").first(),
        s2=(pl.col("w") * (pl.col("x") - pl.col("m")) ** 2).sum() / pl.col("w").sum(),
        n_eff=pl.col("w").sum() ** 3 / (pl.col("w") ** 2).sum() / pl.col("d").sum(),
    )
    n_eff = stats["n_eff"].to_numpy()
    var = (n_eff * stats["s2"].to_numpy() + PRIOR_JOBS * PRIOR_SD**2) / (n_eff + PRIOR_JOBS) * (1 + 1 / n_eff)
    conf = np.clip(_hit_probability(np.sqrt(var)), 0.0, 1.0)
    return stats.select(*keys, "n", "m").with_columns(conf=pl.Series(conf))


def user_votes(pair_stats: pl.DataFrame) -> pl.DataFrame:
    """Per app, the estimate its users vote for: each user's own (app, user) estimate is one vote.

    ``m`` is the median of the users' EWMAs of log10 w_iter and ``conf`` the median of their
    confidences (the mean of the two middle votes for an even number of users); ``n`` counts the
    app's usable jobs. However many jobs a user posts, they move the app's estimate as one user: a
    vote among k others shifts the median at most to a neighbouring vote.
    """
    return pair_stats.group_by("app").agg(
        n=pl.col("n").sum().cast(pl.UInt32), m=pl.col("m").median(), conf=pl.col("conf").median()
    )


def _leave_one_out(rows: pl.DataFrame, units: pl.DataFrame, by: str, unit: list[str], name: str) -> pl.DataFrame:
    """Add ``name``: mean of ``units['v']`` over the units sharing ``by`` with a row, its own unit left out."""
    sums = units.group_by(by).agg(_s=pl.col("v").sum(), _n=pl.len())
    own = units.select(*unit, _own=pl.col("v"))
    out = rows.join(sums, on=by, how="left").join(own, on=unit, how="left")
    den = pl.col("_n") - pl.col("_own").is_not_null().cast(pl.UInt32)
    mean = pl.when(den > 0).then((pl.col("_s") - pl.col("_own").fill_null(0.0)) / den).otherwise(None)
    return out.with_columns(mean.alias(name)).drop("_s", "_n", "_own")


def _float_column(frame: pl.DataFrame, column: str, where: str) -> pl.Series:
    """A numeric column as Float64 (null stays null); InputError if a value is not a number."""
    values = frame[column].cast(pl.Float64, strict=False)
    if values.null_count() > frame[column].null_count():
        raise InputError(f"{where} column {column!r}: expected numbers, got {frame[column].dtype}")
    return values


def _log_column(frame: pl.DataFrame, column: str, where: str) -> pl.Series:
    """log10 of a positive numeric column (null stays null); InputError names the first bad row."""
    values = _float_column(frame, column, where)
    bad = (values <= 0) | values.is_nan()
    if bad.any():
        row = int(bad.arg_true()[0])
        raise InputError(f"{where} column {column!r}: expected values > 0, got {values[row]!r} at row {row}")
    return pl.Series(column, values).log10()


class WIterEstimator(Params):
    """Estimate w_iter of jobs before they run, from the site's job history.

    Parameters
    ----------
    halflife : float, default=5.0
        EWMA half-life in jobs: a job k runs older weighs 2^(-k / halflife).
    min_jobs : int, default=3
        Usable past jobs an (app, user) pair needs to be estimated on its own;
        below, all the app's jobs are used (one is enough).
    min_confidence : float, default=0.0
        Estimates whose confidence is below it are not used (source 'none').
    use_model : bool, default=True
        Fit the submit-time regressor for apps with no history.
    random_state : int or None, default=0
        Seed of the regressor.

    Attributes
    ----------
    pair_stats_, app_stats_ : polars.DataFrame
        Per (app, user): ``n`` usable jobs, ``m`` EWMA of log10 w_iter, ``conf`` its confidence;
        per app: ``n`` usable jobs, ``m`` and ``conf`` the medians over its users' (:func:`user_votes`).
    thin_pairs_, thin_apps_ : polars.DataFrame
        The (app, user) pairs (columns app, user) and apps (column app) whose past jobs
        are all thin evidence (skipped, or called thin at ``fit``): their estimate is
        'none', and they give the model no context.
    model_ : HistGradientBoostingRegressor or None
        None when the history has fewer than 5 apps or ``use_model`` is False.
    model_features_ : list of str
        Its features (see ``fit``).
    model_confidence_ : dict
        Held-out P(|log10 error| < 0.5) of the model per context level
        (0: neither user nor code-name context, 1: user only, 2: code name only, 3: both).
    model_error_ : float or None
        Held-out median absolute log10 error of the model.

    Examples
    --------
    >>> from iosets.datasets import make_job_history
    >>> history = make_job_history(300, n_apps=10, n_users=4, random_state=0)
    >>> est = WIterEstimator().fit(history)
    >>> est.estimate_one(app=history["app"][0], user=history["user"][0])["estimate_source"]
    'history'
    """

    def __init__(self, *, halflife=5.0, min_jobs=3, min_confidence=0.0, use_model=True, random_state=0):
        self.halflife = halflife
        self.min_jobs = min_jobs
        self.min_confidence = min_confidence
        self.use_model = use_model
        self.random_state = random_state

    def fit(self, history: pl.DataFrame, *, thin=None) -> "WIterEstimator":
        """Learn from past jobs (jobs-table schema).

        ``thin`` (booleans, one per job; default none) marks more jobs as thin
        evidence, such as a recommender's below its ``min_confidence``: they still
        count in the EWMAs by their confidence (a doubtful job that disagrees lowers
        the confidence), but a pair or an app with no other job is estimated 'none'.

        ``app``, ``user``, ``start`` and ``w_iter`` are required. Jobs with a
        null w_iter, a zero ``w_iter_confidence`` or a ``not_periodic`` code
        (thin evidence) are skipped; a null confidence counts as 1. A pair,
        or an app, that has only such jobs is estimated 'none', unless none
        of them was analyzed (no w_iter, no confidence, no code: the pair is
        then as if never seen). The model uses only what a submission tells:
        log10 ``nprocs`` and log10 ``requested_time`` when the history has
        them, and context from the other apps of the history: the mean log10
        w_iter and log10(``bytes_read`` + ``bytes_written``) over the user's
        other apps, and the mean log10 w_iter over other apps sharing the
        code name (first run of letters of ``app``). The job's own
        ``runtime``, ``end``, bytes, ``io_time``, ``alpha_io`` and
        ``n_phases`` are not known at submit time and are not used. The user
        enters through these leave-own-app-out means rather than as a
        category code, which would memorize the apps of single-app users.
        """
        check_positive(self.halflife, "halflife")
        check_count(self.min_jobs, "min_jobs", minimum=1)
        check_fraction(self.min_confidence, "min_confidence")
        if not isinstance(history, pl.DataFrame):
            raise InputError(f"history must be a polars DataFrame, got {type(history).__name__}")
        missing = [c for c in HISTORY_COLUMNS if c not in history.columns]
        if missing:
            raise InputError(f"history: missing column(s) {', '.join(missing)}; got {', '.join(history.columns)}")
        if history.height == 0:
            raise InputError("history is empty: expected at least one past job")

        x = _log_column(history, "w_iter", "history")
        if "w_iter_confidence" in history.columns:
            c = _float_column(history, "w_iter_confidence", "history").fill_null(1.0)
            bad = ~((c >= 0) & (c <= 1))
            if bad.any():
                row = int(bad.arg_true()[0])
                raise InputError(f"history column 'w_iter_confidence': expected 0..1, got {c[row]!r} at row {row}")
        else:
            c = pl.Series(np.ones(history.height))
        start = history["start"].cast(pl.Float64, strict=False)
        if start.null_count() or start.is_nan().any():
            row = int((start.is_null() | start.is_nan()).arg_true()[0])
            raise InputError(f"history column 'start': expected a number, got {history['start'][row]!r} at row {row}")
        frame = pl.DataFrame(
            {
                "app": history["app"].cast(pl.String),
                "user": history["user"].cast(pl.String),
                "start": start,
                "x": x,
                "c": c,
            }
        )
        self.has_nprocs_ = "nprocs" in history.columns
        self.has_requested_ = "requested_time" in history.columns
        self.has_bytes_ = "bytes_read" in history.columns and "bytes_written" in history.columns
        if self.has_nprocs_:
            frame = frame.with_columns(log_nprocs=_log_column(history, "nprocs", "history"))
        if self.has_requested_:
            frame = frame.with_columns(log_requested=_log_column(history, "requested_time", "history"))
        if self.has_bytes_:
            total = history["bytes_read"].cast(pl.Float64) + history["bytes_written"].cast(pl.Float64)
            frame = frame.with_columns(log_bytes=(total + 1.0).log10())
            self.user_bytes_ = frame.drop_nulls("log_bytes").group_by("app", "user").agg(v=pl.col("log_bytes").mean())

        codes = history["not_periodic"].cast(pl.String) if "not_periodic" in history.columns else None
        coded = pl.Series(np.zeros(history.height, bool)) if codes is None else codes.is_not_null()
        marked = _thin_mask(thin, history.height)
        rated = history["w_iter_confidence"].is_not_null() if "w_iter_confidence" in history.columns else coded
        frame = frame.with_columns(usable=pl.col("x").is_not_null() & (pl.col("c") > 0) & ~coded)
        frame = frame.with_columns(firm=pl.col("usable") & ~marked, analyzed=pl.col("x").is_not_null() | coded | rated)
        self.thin_pairs_ = _thin_keys(frame, ["app", "user"])
        self.thin_apps_ = _thin_keys(frame, ["app"])
        usable = frame.filter("usable").drop("usable", "firm", "analyzed").sort("start", maintain_order=True)
        if usable.height == 0:
            raise InputError(
                "history: no job with a w_iter, w_iter_confidence > 0 and no not_periodic code; nothing to learn from"
            )
        self.n_history_ = usable.height
        self.pair_stats_ = _ewma(usable, ["app", "user"], float(self.halflife))
        self.app_stats_ = user_votes(self.pair_stats_)
        # the model's context: the user's other pairs and the code name's other apps, thin ones left out
        self._context_pairs = self.pair_stats_.join(self.thin_pairs_, on=["app", "user"], how="anti")
        self._context_apps = self.app_stats_.join(self.thin_apps_, on="app", how="anti")
        self._fit_model(usable)
        self._fit_one()
        return self

    def _context(self, rows: pl.DataFrame) -> pl.DataFrame:
        """Leave-own-app-out context features of ``rows`` (columns app, user, token)."""
        pairs = self._context_pairs.select("app", "user", v=pl.col("m"))
        apps = self._context_apps.select("app", token=_token(pl.col("app")), v=pl.col("m"))
        rows = _leave_one_out(rows, pairs, "user", ["app", "user"], "user_w")
        rows = _leave_one_out(rows, apps, "token", ["app"], "token_w")
        if self.has_bytes_:
            rows = _leave_one_out(rows, self.user_bytes_, "user", ["app", "user"], "user_bytes")
        return rows.sort("_row")

    def _features(self, rows: pl.DataFrame) -> pl.DataFrame:
        """Model features of rows with app, user and optional log_nprocs / log_requested."""
        rows = rows.with_row_index("_row").with_columns(token=_token(pl.col("app")))
        rows = self._context(rows)
        for name, used in (("log_nprocs", self.has_nprocs_), ("log_requested", self.has_requested_)):
            if used and name not in rows.columns:
                rows = rows.with_columns(pl.lit(None, dtype=pl.Float64).alias(name))
        return rows.select(self.model_features_).cast(pl.Float64).fill_null(np.nan)

    def _fit_model(self, usable: pl.DataFrame) -> None:
        """Choose the features; fit the regressor if the history has enough apps."""
        self.model_features_ = [
            name
            for name, used in (
                ("log_nprocs", self.has_nprocs_),
                ("log_requested", self.has_requested_),
                ("user_w", True),
                ("user_bytes", self.has_bytes_),
                ("token_w", True),
            )
            if used
        ]
        self.model_: Any = None  # a HistGradientBoostingRegressor (scikit-learn is imported on use)
        self.model_confidence_: dict[int, float] = {}
        self.model_error_: float | None = None
        apps = usable["app"].to_numpy()
        n_apps = len(np.unique(apps))
        if not self.use_model or n_apps < MIN_MODEL_APPS:
            return
        with threadpool_limits(1):  # small data: OpenMP threads only contend
            self._fit_regressor(usable, apps, n_apps)

    def _fit_regressor(self, usable: pl.DataFrame, apps: np.ndarray, n_apps: int) -> None:
        """Held-out hit rates by GroupKFold over apps, then the regressor on all usable jobs."""
        from sklearn.ensemble import HistGradientBoostingRegressor  # imported on use: ~1 s, not at CLI start
        from sklearn.model_selection import GroupKFold

        X = self._features(usable).to_numpy()
        y = usable["x"].to_numpy()
        per_app = usable.select(pl.len().over("app")).to_series().to_numpy()
        weight = usable["c"].to_numpy() / per_app  # each app weighs the same
        weight *= len(weight) / weight.sum()

        def regressor(rows: np.ndarray) -> HistGradientBoostingRegressor:
            """The regressor fitted on ``rows``; a feature without any value there becomes 0, never split on.

            (scikit-learn's binning fails on an all-NaN column: e.g. user_w when no user ran two apps.)
            """
            X_rows = X[rows]
            X_rows[:, np.isnan(X_rows).all(axis=0)] = 0.0
            model = HistGradientBoostingRegressor(
                learning_rate=0.05,
                max_iter=200,
                max_leaf_nodes=15,
                min_samples_leaf=20,
                l2_regularization=1.0,
                random_state=self.random_state,
            )
            return model.fit(X_rows, y[rows], sample_weight=weight[rows])

        held_out = np.empty_like(y)
        for train, test in GroupKFold(n_splits=min(5, n_apps)).split(X, y, apps):
            held_out[test] = regressor(train).predict(X[test])
        err = np.abs(held_out - y)
        hit = (err < HALF_SET).astype(np.float64)
        level = self._level(X)
        overall = float(np.average(hit, weights=weight))
        for lv in range(4):
            sel = level == lv
            enough = len(np.unique(apps[sel])) >= MIN_LEVEL_APPS
            self.model_confidence_[lv] = float(np.average(hit[sel], weights=weight[sel])) if enough else overall
        self.model_error_ = float(np.median(err))
        self.model_ = regressor(np.arange(len(y)))

    def _level(self, X: np.ndarray) -> np.ndarray:
        """Context level of feature rows: 1 if the user has other apps, + 2 if the code name has."""
        cols = self.model_features_
        return (~np.isnan(X[:, cols.index("user_w")])).astype(int) + 2 * (~np.isnan(X[:, cols.index("token_w")]))

    def _fit_one(self) -> None:
        """Plain dicts for :meth:`estimate_one`, filled by the table path so that both give the same numbers.

        A query's model features other than nprocs and requested_time depend only on the
        user (and on the app, when the history has the pair) and on the code name (and
        on the app, when the history has it); they are computed here for every such key.
        """
        # a null app or user never matches in the table path's joins: left out here too
        self._pairs = {(a, u): (n, m, c) for a, u, n, m, c in self.pair_stats_.drop_nulls(["app", "user"]).iter_rows()}
        self._apps = {a: (m, c) for a, _, m, c in self.app_stats_.drop_nulls("app").iter_rows()}
        self._thin_pairs = set(self.thin_pairs_.iter_rows())
        self._thin_apps = set(self.thin_apps_["app"].to_list())
        self._trees: FlatTrees | None = None
        # keys as the look-ups give them: an unknown user or code name is None (and finds nothing)
        self._pair_context: dict[tuple[str, str | None], tuple[float | None, float | None]] = {}
        self._user_context: dict[str | None, tuple[float | None, float | None]] = {}
        self._app_token_w: dict[str, float | None] = {}
        self._token_w: dict[str | None, float | None] = {}
        if self.model_ is None:
            return
        self._trees = FlatTrees(self.model_)
        no_text = pl.lit(None, pl.String)
        pairs = self.pair_stats_.select("app", "user")
        if self.has_bytes_:
            pairs = pl.concat([pairs, self.user_bytes_.select("app", "user")])
        pairs = pairs.drop_nulls().unique(maintain_order=True)
        users = pairs.select(app=no_text, user="user").unique(maintain_order=True)
        by_user = self._context(_context_rows(pl.concat([pairs, users]).with_columns(token=no_text)))
        if not self.has_bytes_:
            by_user = by_user.with_columns(user_bytes=pl.lit(None, pl.Float64))
        context = {(a, u): (w, b) for a, u, w, b in by_user.select("app", "user", "user_w", "user_bytes").iter_rows()}
        self._pair_context = {(a, u): wb for (a, u), wb in context.items() if a is not None}
        self._user_context = {u: wb for (a, u), wb in context.items() if a is None}
        apps = self.app_stats_.drop_nulls("app").select("app", user=no_text, token=_token(pl.col("app")))
        tokens = apps.select(app=no_text, user=no_text, token="token").drop_nulls("token").unique(maintain_order=True)
        by_token = self._context(_context_rows(pl.concat([apps, tokens])))
        token_w = list(by_token.select("app", "token", "token_w").iter_rows())
        self._app_token_w = {a: w for a, _, w in token_w if a is not None}
        self._token_w = {t: w for a, t, w in token_w if a is None}

    def _history_estimate(self, n_pair, m_pair, c_pair, m_app, c_app):
        """``(confident, log10 w_iter, confidence)`` arrays of the history for query rows: the (app, user) pair's
        EWMA if it has ``min_jobs`` jobs, else the app's; confident where it is at least ``min_confidence``."""
        use_pair = np.asarray(n_pair) >= self.min_jobs
        hist_m = np.asarray(np.where(use_pair, m_pair, m_app), dtype=np.float64)
        hist_c = np.asarray(np.where(use_pair, c_pair, c_app), dtype=np.float64)
        confident = ~np.isnan(hist_m) & (hist_c >= float(self.min_confidence))  # a NaN confidence is no history
        return confident, hist_m, hist_c

    def _history_one(self, n_pair, m_pair, c_pair, m_app, c_app) -> tuple[bool, float, float]:
        """:meth:`_history_estimate` of one query row, without arrays (a service answers one query at a time)."""
        m, c = (m_pair, c_pair) if n_pair >= self.min_jobs else (m_app, c_app)
        return not math.isnan(m) and c >= float(self.min_confidence), m, c

    def _decide_one(self, n_pair, m_pair, c_pair, m_app, c_app, model_m, model_c, thin: bool) -> dict:
        """:meth:`_decide` of one query row, without arrays: the estimate as :meth:`estimate_one` returns it."""
        confident, hist_m, hist_c = self._history_one(n_pair, m_pair, c_pair, m_app, c_app)
        if not thin and confident:
            log_w, confidence, source = hist_m, hist_c, "history"
        elif not thin and not math.isnan(model_m) and model_c >= float(self.min_confidence):
            log_w, confidence, source = model_m, model_c, "model"
        else:
            return {"w_iter": None, "w_iter_confidence": 0.0, "estimate_source": "none"}
        w = float(np.power(10.0, log_w))  # numpy's power, as :meth:`_decide`'s: the same bits
        return {"w_iter": w, "w_iter_confidence": float(confidence), "estimate_source": source}

    def _decide(self, n_pair, m_pair, c_pair, m_app, c_app, model_m, model_c, thin):
        """``(w_iter, confidence, source)`` arrays from the history's and the model's estimates of query rows.

        None where ``thin`` (the history has the pair, or the app, only on thin evidence);
        else the (app, user) pair's EWMA if it has ``min_jobs`` jobs, else the app's; if
        that is missing or less confident than ``min_confidence``, the model's; else none.
        """
        thin = np.asarray(thin, dtype=bool)
        confident, hist_m, hist_c = self._history_estimate(n_pair, m_pair, c_pair, m_app, c_app)
        by_history = ~thin & confident
        by_model = ~thin & ~by_history & ~np.isnan(model_m) & (model_c >= float(self.min_confidence))
        log_w = np.where(by_history, hist_m, np.where(by_model, model_m, np.nan))
        confidence = np.where(by_history, hist_c, np.where(by_model, model_c, 0.0))
        source = np.where(by_history, "history", np.where(by_model, "model", "none"))
        return 10.0**log_w, confidence, source

    def estimate(self, jobs: pl.DataFrame) -> pl.DataFrame:
        """Estimate w_iter of query jobs.

        Parameters
        ----------
        jobs : polars.DataFrame
            Columns ``app`` and ``user``; optional ``nprocs`` and ``requested_time``.

        Returns
        -------
        polars.DataFrame
            One row per query row, same order: ``w_iter`` (Float64, null if no
            estimate), ``w_iter_confidence`` (0..1, 0 if none) and
            ``estimate_source`` ('history', 'model' or 'none').
        """
        self._check_fitted()
        if not isinstance(jobs, pl.DataFrame):
            raise InputError(f"jobs must be a polars DataFrame, got {type(jobs).__name__}")
        missing = [c for c in QUERY_COLUMNS if c not in jobs.columns]
        if missing:
            raise InputError(f"jobs: missing column(s) {', '.join(missing)}; got {', '.join(jobs.columns)}")
        rows = jobs.select(pl.col("app").cast(pl.String), pl.col("user").cast(pl.String))
        for column, name in (("nprocs", "log_nprocs"), ("requested_time", "log_requested")):
            if column in jobs.columns:
                rows = rows.with_columns(_log_column(jobs, column, "jobs").alias(name))

        rows = rows.with_row_index("_row")
        pair = self.pair_stats_.rename({"n": "n_pair", "m": "m_pair", "conf": "c_pair"})
        app = self.app_stats_.rename({"n": "n_app", "m": "m_app", "conf": "c_app"})
        found = rows.join(pair, on=["app", "user"], how="left").join(app, on="app", how="left")
        found = found.join(self.thin_pairs_.with_columns(_thin_pair=True), on=["app", "user"], how="left")
        found = found.join(self.thin_apps_.with_columns(_thin_app=True), on="app", how="left").sort("_row")
        thin = (found["_thin_pair"].fill_null(False) | found["_thin_app"].fill_null(False)).to_numpy()
        m_pair, c_pair, m_app, c_app = (
            found[name].cast(pl.Float64).to_numpy() for name in ("m_pair", "c_pair", "m_app", "c_app")
        )

        model_m = np.full(rows.height, np.nan)
        model_c = np.zeros(rows.height)
        if self.model_ is not None and rows.height:
            X = self._features(rows.drop("_row")).to_numpy()
            known = ~np.isnan(X).all(axis=1)
            if known.any():
                with threadpool_limits(1):
                    model_m[known] = self.model_.predict(X[known])
                model_c[known] = [self.model_confidence_[lv] for lv in self._level(X[known])]

        n_pair = found["n_pair"].fill_null(0).to_numpy()
        w, confidence, source = self._decide(n_pair, m_pair, c_pair, m_app, c_app, model_m, model_c, thin)
        return pl.DataFrame(
            {"w_iter": w, "w_iter_confidence": confidence, "estimate_source": source.astype(str)},
            schema={"w_iter": pl.Float64, "w_iter_confidence": pl.Float64, "estimate_source": pl.String},
        ).with_columns(pl.col("w_iter").fill_nan(None))

    def estimate_one(self, **fields) -> dict:
        """Estimate one job from ``app=``, ``user=`` and optional ``nprocs=``, ``requested_time=`` (str or number).

        The same numbers as :meth:`estimate` on a one-row table, in tens of microseconds
        (dictionary look-ups, and the model's trees walked with numpy).

        Returns ``{'w_iter': float or None, 'w_iter_confidence': float, 'estimate_source': str}``.
        """
        self._check_fitted()
        query = query_fields(fields)
        return self._estimate_query(query["app"], query["user"], query.get("nprocs"), query.get("requested_time"))

    def _estimate_query(self, app: str, user: str | None, nprocs: float | None, requested_time: float | None) -> dict:
        """:meth:`estimate_one` of checked fields; ``user`` None stands for a user the history does not know."""
        n_pair, m_pair, c_pair = self._pairs.get((app, user), (0, np.nan, np.nan))
        m_app, c_app = self._apps.get(app, (np.nan, np.nan))
        thin = (app, user) in self._thin_pairs or app in self._thin_apps
        model_m, model_c = np.nan, 0.0
        # the model is asked when the history does not answer; not when thin (none whatever the model says)
        confident = self._history_one(n_pair, m_pair, c_pair, m_app, c_app)[0]
        if self._trees is not None and not thin and not confident:
            x = self._query_features(app, user, nprocs, requested_time)
            if not np.isnan(x).all():
                model_m = self._trees.predict_one(x)
                model_c = self.model_confidence_[int(self._level(x[None, :])[0])]
        return self._decide_one(n_pair, m_pair, c_pair, m_app, c_app, model_m, model_c, thin)

    def _query_features(self, app: str, user: str | None, nprocs: float | None, requested: float | None) -> np.ndarray:
        """The model's feature row of one query, from the keys :meth:`_fit_one` filled."""
        user_w, user_bytes = self._pair_context.get((app, user)) or self._user_context.get(user) or (None, None)
        token_w = self._app_token_w[app] if app in self._app_token_w else self._token_w.get(_token_of(app))
        values = {
            "log_nprocs": None if nprocs is None else math.log(nprocs) / LN10,
            "log_requested": None if requested is None else math.log(requested) / LN10,
            "user_w": user_w,
            "user_bytes": user_bytes,
            "token_w": token_w,
        }
        return np.array([np.nan if values[name] is None else values[name] for name in self.model_features_])

    def _check_fitted(self) -> None:
        if not hasattr(self, "app_stats_"):
            raise InputError("WIterEstimator is not fitted: call fit(history) first")


def _thin_mask(thin, n: int) -> pl.Series:
    """``fit``'s ``thin`` as n booleans (all False for None); InputError if it is not n booleans."""
    if thin is None:
        return pl.Series(np.zeros(n, bool))
    mask = np.asarray(thin)
    if mask.dtype != bool or mask.shape != (n,):
        raise InputError(f"thin: expected {n} booleans (one per job of the history), got {mask.dtype} {mask.shape}")
    return pl.Series(mask)


def _thin_keys(frame: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """The groups of ``keys`` (nulls left out) with an ``analyzed`` job and no ``firm`` one, sorted.

    A job with no w_iter, no confidence and no ``not_periodic`` code (no trace analyzed: a
    scheduler's post of its metadata) is no evidence either way.
    """
    groups = frame.drop_nulls(keys).group_by(keys).agg(pl.col("firm").any(), pl.col("analyzed").any())
    return groups.filter(~pl.col("firm") & pl.col("analyzed")).select(keys).sort(keys)


def _context_rows(keys: pl.DataFrame) -> pl.DataFrame:
    """``keys`` (app, user, token; null where unknown) as rows for :meth:`WIterEstimator._context`."""
    return keys.select("app", "user", "token").with_row_index("_row")
