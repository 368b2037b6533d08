"""The store: versioned migrations, idempotent inserts, ordered pages, policies and hashed tokens (SQLite)."""

import dataclasses
import re

import polars as pl
import pytest
import sqlalchemy as sa

from iosets.api import _store
from iosets.api._settings import Settings
from iosets.api._store import MIGRATIONS, Store, jobs, metadata, missing_columns, policies, schema_version, tokens
from iosets.errors import IosetsError
from iosets.schemas import JOBS, Column

from .postgres import postgres_database, postgres_server  # noqa: F401  (fixtures)


def test_a_new_store_is_at_the_last_migration(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'iosets.db'}")
    assert store.schema_version() == len(MIGRATIONS) == 3
    with store.engine.connect() as conn:
        indexes = {index["name"] for index in sa.inspect(conn).get_indexes("jobs")}
        journal = conn.exec_driver_sql("PRAGMA journal_mode").scalar()
    assert indexes == {"jobs_app", "jobs_start"}
    assert journal == "wal"


def test_an_old_store_is_upgraded_in_place_and_keeps_its_jobs(tmp_path):
    url = f"sqlite:///{tmp_path / 'iosets.db'}"
    engine = sa.create_engine(url)
    with engine.begin() as conn:  # a store of schema version 1: tables, no index
        metadata.create_all(conn, tables=[schema_version])
        MIGRATIONS[0](conn)
        conn.execute(sa.insert(schema_version).values(version=1))
        conn.execute(sa.insert(jobs).values(job_id="old", user="u", app="A", received_at=1.0))
    engine.dispose()
    store = Store(url)
    assert store.schema_version() == 3
    assert store.get_job("old")["app"] == "A"
    with store.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(schema_version)).scalar() == 1
    assert Store(url).schema_version() == 3  # reopening applies nothing


def _columns(store, table):
    with store.engine.connect() as conn:
        return [column["name"] for column in sa.inspect(conn).get_columns(table)]


def test_the_stored_tables_have_the_columns_of_jobs_after_every_migration(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'iosets.db'}")  # fails first if a JOBS column lacks its migration
    frozen = [name for name in JOBS.names if name != "nodes"]  # migration 1's, then each added one
    assert _columns(store, "jobs") == [*frozen, "received_at", "nodes"]
    assert _columns(store, "policies") == [column.name for column in policies.columns]
    assert _columns(store, "tokens") == [column.name for column in tokens.columns]
    with store.engine.connect() as conn:
        assert missing_columns(conn) == []


def _jobs_with_queue():
    """JOBS with one more column, as a later release would have it."""
    return dataclasses.replace(JOBS, columns=(*JOBS.columns, Column("queue", pl.String, "Batch queue.")))


def _add_queue(conn):
    conn.execute(sa.text("ALTER TABLE jobs ADD COLUMN queue TEXT"))


def test_a_jobs_column_without_its_migration_is_refused_naming_it(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'iosets.db'}"
    Store(url).close()
    monkeypatch.setattr(_store, "JOBS", _jobs_with_queue())
    message = (
        f"store {re.escape(url)} at schema version 3 lacks column.s. jobs.queue that this iosets uses: "
        "a new JOBS column needs a numbered migration"
    )
    with pytest.raises(IosetsError, match=message):
        Store(url)
    with pytest.raises(IosetsError, match="lacks column.s. jobs.queue"):
        Store("sqlite://")  # a new store too: migration 1 is frozen, not built from JOBS


def test_a_new_numbered_migration_adds_the_column_and_keeps_the_rows(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'iosets.db'}"
    today = Store(url)
    today.insert_job({"job_id": "old", "user": "u", "app": "A", "w_iter": 4.0}, received_at=1.0)
    columns = _columns(today, "jobs")
    today.close()
    monkeypatch.setattr(_store, "JOBS", _jobs_with_queue())
    monkeypatch.setattr(_store, "MIGRATIONS", (*MIGRATIONS, _add_queue))
    upgraded = Store(url)
    assert upgraded.schema_version() == 4
    assert _columns(upgraded, "jobs") == [*columns, "queue"]
    with upgraded.engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT job_id, app, w_iter, received_at, queue FROM jobs")).all()
    assert rows == [("old", "A", 4.0, 1.0, None)]
    assert Store(url).schema_version() == 4  # reopening applies nothing
    assert _columns(Store("sqlite://"), "jobs")[-1] == "queue"  # a new store gets it too


def test_an_insert_is_idempotent_by_job_id():
    store = Store("sqlite://")
    first, new = store.insert_job({"job_id": "j", "user": "u", "app": "A", "nprocs": 4}, received_at=10.0)
    again, new_again = store.insert_job({"job_id": "j", "user": "v", "app": "B"}, received_at=20.0)
    assert (new, new_again) == (True, False)
    assert again == first
    assert (first["nprocs"], first["received_at"], store.count_jobs()) == (4, 10.0, 1)


def test_pages_cover_every_job_once_in_start_then_job_id_order():
    store = Store("sqlite://")
    starts = [5.0, None, 1.0, 5.0, 3.0, None, 2.0]
    for i, start in enumerate(starts):
        store.insert_job({"job_id": f"j{i}", "user": "u", "app": "A" if i % 2 else "B", "start": start})
    pages, cursor = [], None
    while True:
        page, cursor = store.list_jobs(limit=3, cursor=cursor)
        pages.append([row["job_id"] for row in page])
        if cursor is None:
            break
    assert pages == [["j1", "j5", "j2"], ["j6", "j4", "j0"], ["j3"]]
    assert [row["job_id"] for row in store.list_jobs(app="A", since=2.0)[0]] == ["j3"]


def test_history_is_a_typed_jobs_table_with_receipt_dates():
    store = Store("sqlite://")
    store.insert_job({"job_id": "j", "user": "u", "app": "A", "w_iter": 4.0, "partial": True}, received_at=7.0)
    history = store.history()
    assert history.row(0, named=True) == {
        **{name: None for name in history.columns},
        "job_id": "j",
        "user": "u",
        "app": "A",
        "w_iter": 4.0,
        "partial": True,
        "received_at": 7.0,
    }
    assert store.history(app="B").height == 0


def test_policies_are_versioned_and_kept():
    store = Store("sqlite://")
    assert store.latest_policy() is None
    first = store.add_policy({"mapping": "set-10"}, only_if_none=True)
    assert store.add_policy({"mapping": "gmm"}, only_if_none=True) == first  # one exists: kept
    second = store.add_policy({"mapping": "gmm"})
    assert [(p["version"], p["mapping"]) for p in store.policies()] == [(1, "set-10"), (2, "gmm")]
    assert store.latest_policy() == second
    assert store.state() == (0, 2)


def test_tokens_are_found_by_hash_until_revoked():
    store = Store("sqlite://")
    token_id = store.add_token("ab" * 32, ["read", "write"], "hook")
    assert store.token_scopes("ab" * 32) == (token_id, frozenset({"read", "write"}))
    assert store.token_scopes("cd" * 32) is None
    store.revoke_token(token_id)
    assert store.token_scopes("ab" * 32) is None
    assert [row["revoked"] for row in store.tokens()] == [True]


@pytest.fixture(params=["sqlite", "postgresql"])
def empty_store_url(request, tmp_path):
    """The URL of an empty store: a SQLite file, or a new database on the session's PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'iosets.db'}"
    return Settings(database=request.getfixturevalue("postgres_database")).store_url


def test_a_store_made_before_the_nodes_column_gains_it_and_keeps_its_jobs(empty_store_url):
    engine = sa.create_engine(empty_store_url)
    with engine.begin() as conn:  # a store of schema version 2, as the release before nodes made it
        metadata.create_all(conn, tables=[schema_version])
        for migration in MIGRATIONS[:2]:
            migration(conn)
        conn.execute(sa.insert(schema_version).values(version=2))
        conn.execute(
            sa.text("INSERT INTO jobs (job_id, \"user\", app, nprocs, received_at) VALUES ('old', 'u', 'A', 8, 1)")
        )
    engine.dispose()
    store = Store(empty_store_url)
    assert store.schema_version() == 3
    assert {key: store.get_job("old")[key] for key in ("app", "nprocs", "nodes")} == {
        "app": "A",
        "nprocs": 8,
        "nodes": None,
    }
    store.insert_job({"job_id": "new", "user": "u", "app": "A", "nodes": 4}, received_at=2.0)
    assert store.history(app="A").sort("job_id").select("job_id", "nodes").rows() == [("new", 4), ("old", None)]
    store.close()


def test_a_batch_answers_each_row_with_the_row_stored_and_whether_it_is_new(empty_store_url):
    """New rows come back as stored (as a later read gives them), a job id stored before with its first row,
    a job id twice in the batch new at its first row only; on both stores."""
    store = Store(empty_store_url)
    store.insert_job({"job_id": "old", "user": "u", "app": "A", "w_iter": 12.5}, received_at=1.0)
    rows = [
        {"job_id": "n1", "user": "u", "app": "A", "nprocs": 4, "w_iter": 3.25, "start": 100.0},
        {"job_id": "old", "user": "v", "app": "B"},
        {"job_id": "n2", "user": "w", "app": "C", "nodes": 2},
        {"job_id": "n1", "user": "x", "app": "D"},
    ]
    answers = store.insert_jobs(rows, received_at=5.0)
    assert [(stored["job_id"], stored["app"], new) for stored, new in answers] == [
        ("n1", "A", True),
        ("old", "A", False),
        ("n2", "C", True),
        ("n1", "A", False),
    ]
    assert [stored for stored, _ in answers] == [store.get_job(row["job_id"]) for row in rows]
    assert (answers[0][0]["nprocs"], answers[0][0]["received_at"], answers[1][0]["received_at"]) == (4, 5.0, 1.0)
    assert store.count_jobs() == 3
    store.close()
