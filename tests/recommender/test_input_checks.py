"""Input values are checked at every entry, never clipped or ignored: each refusal's exact message."""

import io
import math
import warnings

import numpy as np
import polars as pl
import pytest

from iosets.datasets import make_job_history
from iosets.errors import InputError
from iosets.recommender import (
    EXPORT_FORMATS,
    Recommender,
    WIterEstimator,
    assign_sets,
    export,
    map_sets,
    rbfq_reservations,
    recommend,
    set_priorities,
    wfq_weights,
)

PRIORITY_LIMITS = "outside 1e-150..1e+150 where the weights (ratios of priorities) stay finite"
TOO_EXTREME = "a w_iter of about 1 / priority, or such a conservative set, is too extreme"


def raises(message, call, *args, **kwargs):
    """``call(*args, **kwargs)`` raises an InputError whose message is exactly ``message``."""
    with pytest.raises(InputError) as error:
        call(*args, **kwargs)
    assert str(error.value) == message


def jobs(**columns):
    return pl.DataFrame({"job_id": ["a", "b"], "w_iter": [8.0, 95.0], **columns})


@pytest.fixture(scope="module")
def history():
    return make_job_history(300, n_apps=10, n_users=4, random_state=0)


# ---- the jobs table: the schema's message, naming the row and the column ------------------------------------------

BAD_TABLES = [
    (jobs(alpha_io=[0.1, 1.5]), "row 1: alpha_io: expected a number in [0, 1], got 1.5"),
    (jobs(alpha_io=[-0.1, 0.5]), "row 0: alpha_io: expected a number in [0, 1], got -0.1"),
    (jobs(alpha_io=[0.1, math.nan]), "row 1: alpha_io: expected a finite number, got nan"),
    (pl.read_csv(io.StringIO("job_id,w_iter\na,8\nb,abc\n")), "row 1: w_iter: expected a number, got 'abc'"),
    (jobs(w_iter=[8.0, math.inf]), "row 1: w_iter: expected a finite number, got inf"),
    (jobs(w_iter_confidence=[0.5, 2.0]), "row 1: w_iter_confidence: expected a number in [0, 1], got 2.0"),
]


@pytest.mark.parametrize("table, message", BAD_TABLES)
def test_recommend_and_assign_sets_check_the_table(table, message):
    raises(f"jobs table {message}", recommend, table, bandwidth=1e9)
    raises(f"jobs table {message}", assign_sets, table)  # what tune maps its jobs with


@pytest.mark.parametrize("table, message", BAD_TABLES)
def test_recommender_checks_its_history_and_the_tables_it_predicts(history, table, message):
    fields = [pl.lit("x").alias("app"), pl.lit("u").alias("user"), pl.Series("start", [0.0, 1.0])]
    raises(f"history {message}", Recommender(bandwidth=1e9).fit, table.with_columns(fields))
    raises(f"jobs table {message}", Recommender(max_request=65536).fit(history).predict, table)


@pytest.mark.parametrize("table, message", BAD_TABLES)
def test_export_checks_the_recommendation(tmp_path, table, message):
    rec = recommend(jobs(alpha_io=[0.1, 0.1]), bandwidth=1e9)
    bad = rec.with_columns(table[table.columns[-1]])  # the bad column, as a recommendation read from a file
    raises(f"recommendation {message}", export, bad, "agios", tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_estimator_refuses_text_confidences():
    table = pl.DataFrame({"app": ["a"], "user": ["u"], "start": [0.0], "w_iter": [1.0], "w_iter_confidence": ["abc"]})
    raises("history column 'w_iter_confidence': expected numbers, got String", WIterEstimator().fit, table)


def test_estimator_fits_a_history_where_no_user_runs_two_apps():
    # the model's user feature is then empty: scikit-learn's binning failed on an all-NaN column
    n = 6
    table = pl.DataFrame(
        {
            "app": [f"app{k}" for k in range(n)] * 2,
            "user": [f"u{k}" for k in range(n)] * 2,
            "start": [float(k) for k in range(2 * n)],
            "w_iter": [10.0 ** (k % 4) for k in range(2 * n)],
        }
    )
    estimator = WIterEstimator().fit(table)
    assert estimator.model_ is not None
    assert estimator.estimate_one(app="new", user="u1")["estimate_source"] in ("model", "none")


def test_rbfq_reservations_are_not_clipped():
    raises(
        "alpha_io must be a number in [0, 1] (NaN: unknown), got 1.5 at index 1",
        rbfq_reservations,
        [0.5, 1.5],
        [0, 1],
        bandwidth=1e9,
    )
    raises(
        "alpha_io must be a number in [0, 1] (NaN: unknown), got inf at index 0",
        rbfq_reservations,
        [math.inf],
        [0],
        bandwidth=1e9,
    )
    raises(
        "sets must give one set per job: 1 sets for 2 alpha_io values",
        rbfq_reservations,
        [0.5, 0.1],
        [0],
        bandwidth=1e9,
    )
    assert rbfq_reservations([0.5, math.nan], [0, 1], bandwidth=1e9, safety=1.0).tolist() == [5e8, 0.0]


# ---- an empty recommendation -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", EXPORT_FORMATS)
def test_nothing_to_export(tmp_path, fmt):
    empty = recommend(pl.DataFrame(schema={"job_id": pl.String, "w_iter": pl.Float64}))
    options = {"active": [], "rpc_capacity": 10} if fmt == "tbf" else {}
    raises("nothing to export: the recommendation has no job", export, empty, fmt, tmp_path, **options)
    assert list(tmp_path.iterdir()) == []


# ---- enforcement parameters ------------------------------------------------------------------------------------------

BAD_PARAMETERS = [
    ({"bandwidth": 0}, "bandwidth must be a finite number > 0, got 0"),
    ({"bandwidth": -1e9}, "bandwidth must be a finite number > 0, got -1000000000.0"),
    ({"bandwidth": math.nan}, "bandwidth must be a finite number > 0, got nan"),
    ({"bandwidth": math.inf}, "bandwidth must be a finite number > 0, got inf"),
    ({"safety": 0}, "safety must be a finite number > 0, got 0"),
    ({"safety": -1.5}, "safety must be a finite number > 0, got -1.5"),
    ({"safety": math.nan, "bandwidth": None}, "safety must be a finite number > 0, got nan"),  # unused, still checked
    ({"safety": math.inf}, "safety must be a finite number > 0, got inf"),
    ({"limit": 0}, "limit must be a finite number > 0, got 0"),
    ({"limit": -0.5}, "limit must be a finite number > 0, got -0.5"),
    ({"limit": math.nan}, "limit must be a finite number > 0, got nan"),
    ({"limit": math.inf}, "limit must be a finite number > 0, got inf"),
    ({"limit": 50}, "limit must be a fraction of the bandwidth in (0, 1], got 50"),
    ({"limit": 0.5, "bandwidth": None}, "limit is a fraction of the bandwidth: give a bandwidth too"),
    ({"max_request": 0}, "max_request must be an integer >= 1, got 0"),
    ({"max_request": -4096}, "max_request must be an integer >= 1, got -4096"),
    ({"max_request": 4096.0}, "max_request must be an integer >= 1, got 4096.0"),
    (
        {"max_request": 2**31},
        "max_request must be at most 2147483647 (AGIOS keeps a weight in a C int), got 2147483648",
    ),
    ({"min_confidence": 1.5}, "min_confidence must be in [0, 1], got 1.5"),
    ({"min_confidence": math.nan}, "min_confidence must be a finite number >= 0, got nan"),
    ({"conservative_set": 1.5}, "conservative_set must be an integer, got 1.5"),
    ({"base": 0.5, "mapping": "set-b"}, "base must be a finite number > 1, got 0.5"),
    ({"base": math.inf, "mapping": "set-b"}, "base must be a finite number > 0, got inf"),
]


@pytest.mark.parametrize("parameters, message", BAD_PARAMETERS)
def test_recommend_checks_its_parameters(parameters, message):
    raises(message, recommend, jobs(alpha_io=[0.1, 0.1]), **{"bandwidth": 1e9, **parameters})


@pytest.mark.parametrize("parameters, message", BAD_PARAMETERS)
def test_recommender_checks_its_parameters(history, parameters, message):
    raises(message, Recommender(**{"bandwidth": 1e9, **parameters}).fit, history)


def test_wfq_weights_refuse_a_request_beyond_agios_int():
    message = "max_request must be at most 1000 (AGIOS keeps a weight in a C int), got 1024"
    raises(message, wfq_weights, [1.0], max_request=1024, max_weight=1000)


# ---- extreme w_iter: sane sets, no overflow --------------------------------------------------------------------------


def test_map_sets_of_extreme_w_iter():
    assert map_sets([1e-6, 1e9]).tolist() == [-6, 9]
    assert map_sets([5e-324, 1.7976931348623157e308]).tolist() == [-323, 308]  # float64's ends: finite sets
    assert map_sets([1e-6, 1e9], base=2).tolist() == [-20, 30]
    raises("w_iter must be a finite number > 0, got inf at index 1", map_sets, [1.0, math.inf])
    raises("w_iter must be a finite number > 0, got -0.0 at index 0", map_sets, [-0.0])


def test_a_microsecond_and_thirty_years_map_to_sane_sets():
    table = pl.DataFrame({"job_id": ["a", "b", "c"], "w_iter": [1e-6, 1e9, None], "alpha_io": [0.1, 0.1, 0.1]})
    with pytest.warns(UserWarning, match="WFQ weights above 2147483647"):
        rec = recommend(table, bandwidth=1e9)
    assert rec["set"].to_list() == [-6, 9, 10]
    assert rec["priority"].to_list() == pytest.approx([1e6, 1e-9, 1e-10])
    assert rec["rbfq_weight"].to_list() == pytest.approx([1e16, 10.0, 1.0])
    assert rec["wfq_weight"].to_list() == [2**31 - 1, 10 << 20, 1 << 20]
    numbers = rec.select("priority", "rbfq_weight", "rbfq_reservation").to_numpy()
    assert np.isfinite(numbers).all() and (numbers > 0).all()


@pytest.mark.parametrize(
    "w_iter, mapping, message",
    [
        ([1e-200, 1.0], "set-10", f"set -200 would get priority 1e+200, {PRIORITY_LIMITS}: {TOO_EXTREME}"),
        ([1e200, 1.0], "set-10", f"set 200 would get priority 1e-200, {PRIORITY_LIMITS}: {TOO_EXTREME}"),
        ([5e-324, 1.0], "set-2", f"set -1074 would get priority inf, {PRIORITY_LIMITS}: {TOO_EXTREME}"),
        ([5e-324, 1.0], "gmm", f"set 0 would get priority inf, {PRIORITY_LIMITS}: {TOO_EXTREME}"),
    ],
)
def test_priorities_beyond_what_weights_hold_are_refused(w_iter, mapping, message):
    raises(message, recommend, pl.DataFrame({"job_id": ["a", "b"], "w_iter": w_iter}), mapping)


def test_conservative_sets_beyond_what_weights_hold_are_refused(history):
    message = f"set -400 would get priority inf, {PRIORITY_LIMITS}: {TOO_EXTREME}"
    raises(message, Recommender(conservative_set=-400).fit, history)  # checked even with no job to put there
    raises(f"set 400 would get priority 0, {PRIORITY_LIMITS}: {TOO_EXTREME}", set_priorities, [400])


def test_a_base_close_to_one_does_not_hang(history):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # capped WFQ weights
        # without the w_iter model, whose boosted trees take seconds (more under load) whatever the mapping
        recommender = Recommender(mapping="set-1.000001", estimator=WIterEstimator(use_model=False)).fit(history)
    # it returns at all (a base this close to one once looped over millions of sets), with the right priority
    known = recommender.predict_one(app=history["app"][0], user=history["user"][0])
    assert known["priority"] == pytest.approx(1.000001 ** -known["set"])


def test_a_history_names_each_missing_column_once():
    message = (
        "history: missing column(s) app, user, start; expected job_id, w_iter, app, user, start (has job_id, w_iter)"
    )
    raises(message, Recommender().fit, jobs())
