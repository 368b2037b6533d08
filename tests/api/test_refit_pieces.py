"""A refit's estimator travels attribute by attribute, its look-up tables in pieces (``iosets.api._refit.Pieces``),
so that reading it back never holds the interpreter for the whole estimator; what is read back is what was fitted."""

import math
import pickle

import polars as pl

from iosets.api import Settings, _refit
from iosets.api._refit import Pieces, fit_snapshot, fit_snapshot_pickled, load_snapshot
from iosets.api._service import Service
from iosets.datasets import make_job_history


def test_a_table_is_pickled_in_pieces_of_at_most_piece_items_and_read_back_whole(monkeypatch):
    monkeypatch.setattr(_refit, "PIECE_ITEMS", 3)
    table = {("app", f"user{k}"): (k, k / 7, None) for k in range(10)}
    pieces = Pieces(table)
    assert [len(pickle.loads(piece)) for piece in pieces.pieces] == [3, 3, 3, 1]
    assert pieces.read() == table and list(pieces.read()) == list(table)  # the items and their order
    frame = pl.DataFrame({"app": ["a", "b"], "w": [1.0, None]})
    assert len(Pieces(frame).pieces) == 1 and Pieces(frame).read().equals(frame)
    assert Pieces({}).read() == {}


def test_a_refit_read_back_is_the_estimator_fitted_and_answers_alike(tmp_path, monkeypatch):
    monkeypatch.setattr(_refit, "PIECE_ITEMS", 7)
    service = Service(Settings(data_dir=str(tmp_path), write_rate=1e9))
    try:
        for row in make_job_history(400, n_apps=9, n_users=6, random_state=11).drop("source").to_dicts():
            service.add_job(row)
        policy, url = service.current_policy(), service.settings.store_url
        plain = {}

        def fit_and_keep(*args, **kwargs):  # the snapshot as fitted, pickled whole (as before pieces)
            snapshot = fit_snapshot(*args, **kwargs)
            plain["pickled"] = pickle.dumps(snapshot)
            return snapshot

        monkeypatch.setattr(_refit, "fit_snapshot", fit_and_keep)
        pickled = fit_snapshot_pickled(url, policy, use_model=True, rebuild=False)
    finally:
        service.stop()
    whole = pickle.loads(plain["pickled"]).known
    fitted = whole.estimator_
    sent = pickle.loads(pickled).known.estimator_  # as it travels: every container attribute in its Pieces
    tables = {name: value for name, value in vars(fitted).items() if type(value) is dict}
    assert len(tables["_pairs"]) > 7  # tables of several pieces
    for name, value in tables.items():
        assert isinstance(getattr(sent, name), Pieces)
        assert len(getattr(sent, name).pieces) == math.ceil(len(value) / 7)
    read = load_snapshot(pickled, freeze=False).known
    for name, value in vars(fitted).items():
        got = getattr(read.estimator_, name)
        assert type(got) is type(value), name
        if isinstance(value, pl.DataFrame):
            assert got.equals(value), name
        elif type(value) is dict:
            assert got.keys() == value.keys() and all(
                pickle.dumps(got[key]) == pickle.dumps(value[key])
                for key in value  # NaN alike
            ), name
    history = make_job_history(400, n_apps=9, n_users=6, random_state=11)
    queries = history.select("app", "user").unique().sort("app", "user").to_dicts()
    queries += [{"app": "unseen", "user": "new"}, {"app": queries[0]["app"], "user": "new"}]
    assert [read.predict_one(**query) for query in queries] == [whole.predict_one(**query) for query in queries]
