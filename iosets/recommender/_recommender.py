"""`Recommender`: a site's mapping learned once from its job history, then applied to tables and to single jobs."""

import warnings

import numpy as np
import polars as pl

from ..errors import InputError
from ._enforcement import rbfq_demands, reservation_scale, wfq_weights
from ._history import HISTORY_COLUMNS, WIterEstimator, query_fields
from ._mappings import fit_mapping
from ._params import Params
from ._recommend import check_jobs, evidence, io_fractions, set_summary, with_recommendation
from ._thin import thin_jobs, thin_reasons

_UNSEEN = object()


class Recommender(Params):
    """Sets, priorities and enforcement parameters of jobs, learned from a site's job history.

    ``fit`` learns the mapping (SET-b, or the boundaries of a Gaussian mixture, and the
    conservative set) and the w_iter estimator from past jobs, and precomputes the
    answer for every (app, user) pair and app the history knows. ``predict`` then
    recommends a jobs table as :func:`recommend` does; ``predict_one`` answers a job
    about to start in microseconds (a dictionary look-up for a known app; the
    estimator's model, then the mapping, for an app never seen).

    Parameters
    ----------
    mapping : str, default="set-10"
        ``set-10``, ``set-b`` with ``base`` (or ``set-<b>``), or ``gmm`` (see :func:`recommend`).
    base : float, default=10.0
        Base of ``set-b``.
    min_confidence : float, default=0.5
        Jobs with no w_iter, a w_iter (measured or estimated) less confident than this,
        or a ``not_periodic`` code go to the conservative set, or to the lower-priority
        set their w_iter gives, never to a set of higher priority; an (app, user) pair or
        an app the history holds only such jobs of (thin evidence; a null confidence counts
        as 1 there, as the estimator reads it) does too.
    conservative_set : int, default=None
        Their set; by default one set below the lowest-priority set of the history's
        confidently mapped jobs.
    max_sets : int, default=8
        Largest number of sets of ``gmm``.
    bandwidth : float, default=None
        File system bandwidth (bytes/s), for RBFQ reservations and limits.
    max_request : int, default=1 MiB
        WFQ weight (bytes per round) of the lowest priority.
    safety : float, default=1.5
        RBFQ reservation = safety x alpha_io x bandwidth per job; a set reserves what its
        largest job does (see :func:`recommend`).
    limit : float, default=None
        RBFQ upper bound per job, as a fraction of ``bandwidth``, in (0, 1].
    random_state : int, default=0
        Seed of ``gmm``.
    estimator : WIterEstimator, default=None
        Its parameters estimate the w_iter of jobs about to start (a copy is fitted on
        the history); None: ``WIterEstimator()``.

    Attributes
    ----------
    mapping_ : SetMapping
        The learned rule: w_iter and confidence -> set and priority, with the conservative
        set and the lowest priority of the history (the reference of the weights).
    sets_ : polars.DataFrame
        The history's recommendation per set (:data:`iosets.schemas.SET_SUMMARY`).
    estimator_ : WIterEstimator
        The estimator fitted on the history, told which jobs are thin evidence (it
        estimates none for the pairs and apps it has only such jobs of).
    reservation_scale_ : float or None
        The factor (<= 1) that fitted the reservations of the history's sets (each the
        largest of its jobs') into ``bandwidth`` (None without one).
    reservation_by_app_ : dict
        RBFQ reservation of a new job of each app: ``safety x`` the median over its users of each
        user's median ``alpha_io`` (one vote per user) ``x bandwidth x reservation_scale_`` (empty
        without ``bandwidth``);
        :meth:`predict_one` caps it at the reservation of the job's set in ``sets_``, or, for a
        set the history lacks, at the bandwidth its sets leave free.
    pairs_, apps_ : dict
        The answer of :meth:`predict_one` (without the query's fields) for an
        ``(app, user)`` pair with enough jobs of its own or only thin-evidence ones, and
        for an app with a user it has not seen, when the history decides it (the
        conservative set for thin evidence); None when the estimator's model does
        (the answer then depends on nprocs and requested_time).

    Examples
    --------
    >>> from iosets.datasets import make_job_history
    >>> history = make_job_history(300, n_apps=10, n_users=4, random_state=0)
    >>> recommender = Recommender(max_request=65536).fit(history)
    >>> recommender.predict(history).height
    300
    >>> job = recommender.predict_one(app="gromacs_mini", user="u01")
    >>> job["estimate_source"], round(job["w_iter"], 1), job["set"], job["priority"], job["wfq_weight"]
    ('history', 2.2, 0, 1.0, 655360000)
    >>> new = recommender.predict_one(app="brand_new", user="nobody")
    >>> new["estimate_source"], new["set"], new["conservative"], new["wfq_weight"]
    ('none', 4, True, 65536)
    """

    def __init__(
        self,
        *,
        mapping: str = "set-10",
        base: float = 10.0,
        min_confidence: float = 0.5,
        conservative_set: int | None = None,
        max_sets: int = 8,
        bandwidth: float | None = None,
        max_request: int = 1 << 20,
        safety: float = 1.5,
        limit: float | None = None,
        random_state: int = 0,
        estimator: WIterEstimator | None = None,
    ):
        self.mapping = mapping
        self.base = base
        self.min_confidence = min_confidence
        self.conservative_set = conservative_set
        self.max_sets = max_sets
        self.bandwidth = bandwidth
        self.max_request = max_request
        self.safety = safety
        self.limit = limit
        self.random_state = random_state
        self.estimator = estimator

    def fit(self, history: pl.DataFrame) -> "Recommender":
        """Learn the mapping, the estimator and the answers for known apps from past jobs.

        ``history`` is a jobs table (:data:`iosets.schemas.JOBS`) with ``app``, ``user``,
        ``start`` and ``w_iter`` (``alpha_io`` too with a ``bandwidth``); the same
        columns :class:`WIterEstimator` learns from.
        """
        history = check_jobs(history, source="history", require=HISTORY_COLUMNS)
        self.mapping_ = fit_mapping(
            *evidence(history),
            mapping=self.mapping,
            base=self.base,
            min_confidence=self.min_confidence,
            conservative_set=self.conservative_set,
            max_sets=self.max_sets,
            random_state=self.random_state,
        )
        recommended = with_recommendation(history, self.mapping_, **self._enforcement())
        self.sets_ = set_summary(recommended)
        estimator = WIterEstimator() if self.estimator is None else WIterEstimator(**self.estimator.get_params())
        self.estimator_ = estimator.fit(history, thin=thin_jobs(history, min_confidence=self.min_confidence))
        self._why_thin = thin_reasons(
            history, min_confidence=self.min_confidence, pairs=estimator.thin_pairs_, apps=estimator.thin_apps_
        )
        self.reservation_scale_, self.reservation_by_app_, self._set_reservation = None, {}, {}
        self._spare: float | None = None
        if self.bandwidth is not None:
            alpha = io_fractions(history)
            demand = rbfq_demands(alpha, bandwidth=self.bandwidth, safety=self.safety)
            self.reservation_scale_ = reservation_scale(demand, recommended["set"], bandwidth=self.bandwidth)
            by_app = history.select("app", "user", alpha=pl.Series(alpha, nan_to_null=True)).drop_nulls(["alpha"])
            by_user = by_app.group_by("app", "user").agg(pl.col("alpha").median())  # each user one vote
            by_app = by_user.group_by("app").agg(pl.col("alpha").median())
            demand = rbfq_demands(by_app["alpha"].to_numpy(), bandwidth=self.bandwidth, safety=self.safety)
            reservation = (demand * self.reservation_scale_).tolist()
            self.reservation_by_app_ = dict(zip(by_app["app"].to_list(), reservation, strict=True))
            self._set_reservation = dict(self.sets_.select("set", "rbfq_reservation").iter_rows())
            self._spare = max(0.0, self.bandwidth - sum(self._set_reservation.values()))
        sets = [*self.sets_["set"].to_list(), self.mapping_.conservative_set]
        with warnings.catch_warnings():  # capped WFQ weights: the history's recommendation warned already
            warnings.simplefilter("ignore", UserWarning)
            self._terms = self._terms_of(sorted(set(sets)))  # not the range between: set-1.000001 has millions
        self.pairs_, self.apps_ = self._lookups()
        return self

    def predict(self, jobs: pl.DataFrame) -> pl.DataFrame:
        """``jobs`` with the columns of :data:`iosets.schemas.RECOMMENDATION` under the learned mapping.

        The same table as :func:`recommend` gives for the history itself; the weights
        are relative to the lowest priority of ``jobs`` and of the history, and the
        reservations fit the sets of ``jobs`` into ``bandwidth``.
        """
        self._check_fitted()
        return with_recommendation(check_jobs(jobs), self.mapping_, **self._enforcement())

    def predict_one(
        self,
        *,
        app: str | None = None,
        user: str | None = None,
        nprocs: float | str | None = None,
        requested_time: float | str | None = None,
    ) -> dict:
        """Set, priority and enforcement parameters of a job about to start.

        Parameters
        ----------
        app, user : str
            The job's app and user (required: InputError when missing).
        nprocs, requested_time : float or str, default=None
            What the submission tells, for an app the history does not know.

        Returns
        -------
        dict
            The given fields, ``w_iter``, ``w_iter_confidence``, ``estimate_source``
            ('history', 'model' or 'none': see :class:`WIterEstimator`), the columns
            of :data:`iosets.schemas.RECOMMENDATION` and ``explanation``: where the answer
            comes from, in words (``conservative set 4: no w_iter estimate (user 1001's
            only run of app_x: io_bound)``). A pair, or an app, the history holds only on
            thin evidence (no w_iter, a confidence below ``min_confidence`` or a
            ``not_periodic`` code) gets the conservative set, whatever its other users'
            or the user's other apps' jobs say. Set, priority and weights are
            those :meth:`predict` gives a job with that w_iter and confidence (an estimate
            below ``min_confidence``, or none, lands in the conservative set; weights
            relative to the lowest of its priority and the history's); the reservation is
            ``safety x`` the app's median past ``alpha_io`` ``x bandwidth``, scaled by
            ``reservation_scale_`` (0 for an app without one) and capped at the
            reservation of its set in ``sets_`` (one job of a set does I/O at a time), or
            at what the history's sets leave of the bandwidth for a set they lack.
        """
        self._check_fitted()
        fields = {"app": app, "user": user, "nprocs": nprocs, "requested_time": requested_time}
        given = {key: value for key, value in fields.items() if value is not None}
        query = query_fields(given)
        answer = self._answer(query["app"], query["user"], query.get("nprocs"), query.get("requested_time"))
        return {**given, **answer}

    def _answer(
        self, app: str, user: str | None, nprocs: float | None = None, requested_time: float | None = None
    ) -> dict:
        """:meth:`predict_one` without the query's fields, for checked fields; ``user`` None: a user never seen."""
        found = self.pairs_.get((app, user), _UNSEEN)
        if found is _UNSEEN:
            found = self.apps_.get(app)
        if found is not None:
            return found
        return self._answer_one((app, user), self.estimator_._estimate_query(app, user, nprocs, requested_time))

    def _enforcement(self) -> dict:
        names = ("bandwidth", "max_request", "safety", "limit")
        return {name: getattr(self, name) for name in names}

    def _lookups(self) -> tuple[dict, dict]:
        """``pairs_`` and ``apps_``: the estimator's table path on every known key, mapped.

        A key the history holds only on thin evidence is decided (none: the conservative
        set); another one only when the history's EWMA gives its estimate.
        """
        estimator = self.estimator_
        pairs = estimator.pair_stats_.filter(pl.col("n") >= estimator.min_jobs).drop_nulls(["app", "user"])
        pairs = pl.concat([pairs.select("app", "user"), estimator.thin_pairs_])
        apps = pl.concat([estimator.app_stats_.drop_nulls("app").select("app"), estimator.thin_apps_])
        queries = pl.concat([pairs, apps.with_columns(user=pl.lit(None, pl.String))])
        keys = list(queries.iter_rows())
        answers = self._answers(keys, estimator.estimate(queries).to_dicts())
        thin = set(estimator.thin_pairs_.iter_rows()) | {(app, None) for app in estimator.thin_apps_["app"]}
        pairs_and_answers = zip(keys, answers, strict=True)
        decided = [a if a["estimate_source"] == "history" or key in thin else None for key, a in pairs_and_answers]
        n = pairs.height
        pairs_ = dict(zip(keys[:n], decided[:n], strict=True))
        return pairs_, {app: a for (app, _), a in zip(keys[n:], decided[n:], strict=True)}

    def _answers(self, keys: list[tuple[str, str | None]], estimates: list[dict]) -> list[dict]:
        """Each job's answer (see :meth:`predict_one`) from its (app, user) and its w_iter estimate."""
        w = np.array([np.nan if e["w_iter"] is None else e["w_iter"] for e in estimates], dtype=np.float64)
        confidence = np.array([e["w_iter_confidence"] for e in estimates], dtype=np.float64)
        sets, conservative = self.mapping_.classify(w, confidence)
        return self._answer_rows(keys, estimates, sets.tolist(), conservative.tolist())

    def _answer_one(self, key: tuple[str, str | None], estimate: dict) -> dict:
        """:meth:`_answers` of one job, with few arrays (a service answers one job at a time)."""
        set_, conservative = self.mapping_.classify_one(estimate["w_iter"], estimate["w_iter_confidence"])
        return self._answer_rows([key], [estimate], [set_], [conservative])[0]

    def _answer_rows(self, keys: list, estimates: list[dict], sets: list[int], conservative: list[bool]) -> list[dict]:
        """The answers of jobs whose sets and thin evidence are known."""
        unknown = set(sets) - self._terms.keys()  # a set only the model's estimate reaches
        terms = {**self._terms, **self._terms_of(sorted(unknown))} if unknown else self._terms
        no_reservation = None if self.bandwidth is None else 0.0
        limit = None if self.bandwidth is None or self.limit is None else float(self.limit) * self.bandwidth
        return [
            {
                "w_iter": e["w_iter"],
                "w_iter_confidence": e["w_iter_confidence"],
                "estimate_source": e["estimate_source"],
                "set": s,
                "priority": terms[s][0],
                "conservative": c,
                "wfq_weight": terms[s][1],
                "rbfq_reservation": self._reservation(app, s, no_reservation),
                "rbfq_weight": terms[s][2],
                "rbfq_limit": limit,
                "explanation": self._explanation(app, user, e, s, c),
            }
            for (app, user), e, s, c in zip(keys, estimates, sets, conservative, strict=True)
        ]

    def _explanation(self, app: str, user: str | None, estimate: dict, set_: int, conservative: bool) -> str:
        """Where an answer comes from, in words (see :meth:`predict_one`)."""
        source = estimate["estimate_source"]
        if source == "none":
            origin = f"no w_iter estimate ({self._why_none(app, user)})"
        elif source == "model":
            origin = f"model of job metadata (no usable history of {app})"
        elif (app, user) in self.estimator_._pairs and self.estimator_._pairs[app, user][0] >= self.estimator_.min_jobs:
            origin = f"EWMA of user {user}'s past jobs of {app}"
        else:
            origin = f"EWMA of the past jobs of {app}"
        if not conservative:
            return origin
        if source != "none":
            origin += f", confidence {estimate['w_iter_confidence']:.2f} below {self.min_confidence:g}"
        return f"conservative set {set_}: {origin}"

    def _why_none(self, app: str, user: str | None) -> str:
        """Why the estimator gave no estimate of the pair ``(app, user)`` (``user`` None: a user never seen)."""
        reasons = self._why_thin.get((app, user)) or self._why_thin.get((app, None))
        if reasons is not None:
            return reasons
        if app not in self.estimator_._apps:
            tried = ", and the model gives none confident enough" if self.estimator_.model_ is not None else ""
            return f"{app} is not in the history{tried}"
        return f"no estimate of {app} reaches the estimator's min_confidence"

    def _reservation(self, app: str, set_: int, default: float | None) -> float | None:
        """The RBFQ reservation of a new job (see :meth:`predict_one`); ``default`` for an app without one."""
        reservation = self.reservation_by_app_.get(app, default)
        cap = self._set_reservation.get(set_, self._spare)  # a set the history lacks: what its sets leave
        return reservation if reservation is None or cap is None else min(reservation, cap)

    def _terms_of(self, sets) -> dict[int, tuple[float, int, float]]:
        """Priority, WFQ weight and RBFQ weight of a job in each set, relative to the history's lowest priority."""
        sets = np.asarray(sets, dtype=np.int64)
        priority = self.mapping_.priorities(sets)
        lowest = self.mapping_.lowest_priority
        reference = priority if lowest is None else np.minimum(priority, lowest)
        wfq = wfq_weights(priority, max_request=self.max_request, reference=reference)
        terms = zip(priority.tolist(), wfq.tolist(), (priority / reference).tolist(), strict=True)
        return dict(zip(sets.tolist(), terms, strict=True))

    def _check_fitted(self) -> None:
        if not hasattr(self, "pairs_"):
            raise InputError("Recommender is not fitted: call fit(history) first")
