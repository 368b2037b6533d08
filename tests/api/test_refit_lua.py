"""The refit worker writes the Lua document the service wrote before: the export of its snapshot."""

import re

from iosets.api import Settings
from iosets.api._refit import fit_history, fit_recommender, fit_snapshot
from iosets.api._service import Service
from iosets.datasets import make_job_history
from iosets.recommender import export
from iosets.schemas import JOBS

GENERATED = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


def test_the_workers_lua_document_is_the_export_of_the_stored_jobs(tmp_path):
    service = Service(Settings(data_dir=str(tmp_path / "data"), write_rate=1e9))
    history = make_job_history(120, n_apps=4, n_users=3, random_state=2)
    for row in history.select([name for name in JOBS.names if name in history.columns]).to_dicts():
        service.add_job(row)
    policy = service.current_policy()
    written = tmp_path / "worker.lua"
    snapshot = fit_snapshot(service.settings.store_url, policy, use_model=False, rebuild=False, lua_out=str(written))
    assert snapshot.error is None and snapshot.known is not None
    stored = fit_history(service.store.history())
    known = fit_recommender(policy, stored, use_model=False)
    expected = tmp_path / "service.lua"
    export(known.predict(stored), "lua", expected, recommender=known)
    text = written.read_text()
    assert all(f'["{app}"]' in text for app in ("wrf_big", "wrf_dev", "wrf_mini", "wrf_prod"))  # every app keyed
    assert GENERATED.sub("DATE", text) == GENERATED.sub("DATE", expected.read_text())
    assert written.stat().st_mode & 0o777 == expected.stat().st_mode & 0o777
    service.stop()
