"""A job's set and priority for the arbiter, learned from its recommendation: a written file or the service."""

import polars as pl
import pytest

from iosets.arbiter import assignment
from iosets.errors import InputError
from iosets.recommender import Recommendation, recommend

JOBS = pl.DataFrame(
    {
        "job_id": ["a", "b", "c", "d"],
        "app": ["wrf", "wrf", "lammps", "lammps"],
        "user": ["u1", "u2", "u1", "u1"],
        "w_iter": [10.0, 100.0, 1000.0, 1000.0],
    }
)


@pytest.fixture
def written(tmp_path):
    return Recommendation.of(recommend(JOBS)).write(tmp_path / "rec.csv").written[0]


def test_a_job_in_the_recommendation_gets_its_row(written):
    assert assignment("a", recommendation=written) == (1, 0.1)  # round(log10 10) = 1, priority 10^-1
    assert assignment("c", app="wrf", recommendation=written) == (3, 0.001)  # the job id wins over the app


def test_a_new_job_of_a_known_app_gets_the_apps_lowest_priority(written):
    assert assignment("new", app="wrf", recommendation=written) == (2, 0.01)  # wrf ran in sets 1 and 2
    assert assignment(app="wrf", user="u1", recommendation=written) == (1, 0.1)  # that user's own runs
    assert assignment(app="wrf", user="u9", recommendation=written) == (2, 0.01)  # a user it never saw: the app's


def test_a_job_nobody_knows_is_named(written):
    with pytest.raises(InputError, match=r"rec\.csv: no row for job 'x' or app 'vasp'$"):
        assignment("x", app="vasp", recommendation=written)
    with pytest.raises(InputError, match="give the job's job_id or its app"):
        assignment(recommendation=written)


def test_without_a_file_the_service_answers_and_its_default_stands_in_when_it_cannot(monkeypatch):
    monkeypatch.setenv("IOSETS_URL", "http://127.0.0.1:9")  # discard port: nothing listens
    monkeypatch.setenv("IOSETS_DEFAULT_SET", "7")
    monkeypatch.delenv("IOSETS_DEFAULT_PRIORITY", raising=False)
    assert assignment("j1", app="wrf", user="u1") == (7, 1e-7)
