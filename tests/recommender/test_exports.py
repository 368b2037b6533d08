"""Exports: each file is parsed back with an independent parser and compared with the recommendation."""

import json
import os
import re
import shlex
import stat
import subprocess
import warnings
from datetime import UTC, datetime, timedelta, timezone
from importlib.resources import files

import libconf
import numpy as np
import polars as pl
import pytest
from lupa import LuaRuntime

from iosets.datasets import make_job_history
from iosets.errors import InputError
from iosets.recommender import Recommender, recommend, recommendation_document, render_export, set_summary
from iosets.recommender._enforcement import AGIOS_MAX_WEIGHT
from iosets.recommender._export import EXPORT_FORMATS, export
from iosets.recommender._export_cgroup import cgroup_weights
from iosets.recommender._export_tbf import tbf_rates

ODD_APP = 'odd "app"\\\n ñ ]]'


@pytest.fixture
def recommended():
    """Sets 0-3 plus conservative jobs (no w_iter, or a low confidence) in set 4, one below the lowest."""
    jobs = pl.DataFrame(
        {
            "job_id": ["101", "102", "103", "104", "105", "106", "107", "108"],
            "user": ["1001", "1001", "1002", "1002", "1002", "1003", "1003", "1001"],
            "app": ["lammps", "lammps", "lammps", "wrf", "wrf", ODD_APP, "io500", "io500"],
            "start": [float(k) for k in range(8)],  # the order of the runs, for the estimator's EWMA
            "w_iter": [8.0, 9.0, 95.0, 950.0, None, None, 0.5, 30.0],
            "w_iter_confidence": [0.9, 0.9, 0.9, 0.9, 0.0, 0.0, 0.9, 0.1],
            "alpha_io": [0.1, 0.1, 0.05, 0.02, None, None, 0.2, 0.1],
        }
    )
    rec = recommend(jobs, bandwidth=1e9, limit=0.5, max_request=1 << 16)
    assert rec["set"].to_list() == [1, 1, 2, 3, 4, 4, 0, 4]
    assert rec["conservative"].to_list() == [False] * 4 + [True, True, False, True]
    return rec


# ---- AGIOS ---------------------------------------------------------------------------------------------------------

AGIOS_OPTIONS = [  # every library_options entry AGIOS's read_configuration_file looks up
    "trace", "trace_file_prefix", "trace_file_sufix", "default_algorithm", "waiting_time", "aioli_quantum",
    "mlf_quantum", "select_algorithm_period", "select_algorithm_min_reqnumber", "starting_algorithm",
    "performance_values", "enable_SW", "SW_window", "twins_window", "max_trace_buffer_size", "wfq_conf",
]  # fmt: skip


def read_wfq_conf(path):
    """wfq.conf as AGIOS's fscanf("%d ") reads it: integers only, one per line."""
    lines = path.read_text().splitlines()
    assert all(re.fullmatch(r"[0-9]+", line) for line in lines), lines
    return [int(line) for line in lines]


def test_agios_conf_selects_wfq_and_points_at_the_weights(recommended, tmp_path):
    conf_path, wfq_path = export(recommended, "agios", tmp_path)
    assert (conf_path.name, wfq_path.name) == ("agios.conf", "wfq.conf")
    with open(conf_path) as f:
        conf = libconf.load(f)
    options = conf["library_options"]
    assert sorted(options) == sorted(AGIOS_OPTIONS)
    assert options["default_algorithm"] == "WFQ"
    assert options["wfq_conf"] == str(wfq_path.absolute())
    summary = set_summary(recommended)
    queues = conf["iosets"]["queues"]
    assert [q["queue"] for q in queues] == list(range(summary.height))
    assert [q["set"] for q in queues] == summary["set"].to_list() == [0, 1, 2, 3, 4]
    assert [q["priority"] for q in queues] == pytest.approx(summary["priority"].to_list())
    weights = read_wfq_conf(wfq_path)
    assert weights == [q["wfq_weight"] for q in queues] == summary["wfq_weight"].to_list()
    assert weights == [10000 * 2**16, 1000 * 2**16, 100 * 2**16, 10 * 2**16, 2**16]
    assert max(weights) <= AGIOS_MAX_WEIGHT


def test_agios_to_a_file_name_and_an_install_path(recommended, tmp_path):
    conf_path, wfq_path = export(recommended, "agios", tmp_path / "site" / "agios-io.conf", wfq_path="/etc/wfq.conf")
    assert conf_path == tmp_path / "site" / "agios-io.conf" and wfq_path == tmp_path / "site" / "wfq.conf"
    assert libconf.loads(conf_path.read_text())["library_options"]["wfq_conf"] == "/etc/wfq.conf"
    assert stat.S_IMODE(conf_path.stat().st_mode) == 0o644


def test_agios_path_longer_than_its_buffer(recommended, tmp_path):
    with pytest.raises(InputError, match="wfq_path must be at most 99 bytes"):
        export(recommended, "agios", tmp_path, wfq_path="/" + "x" * 99)


# ---- Lustre TBF ------------------------------------------------------------------------------------------------------

LCTL = """#!/bin/sh
printf '%s\\n' "$@" >> "$LCTL_LOG"
echo --- >> "$LCTL_LOG"
if [ "$1" = get_param ]; then cat "$LCTL_RULES"; fi
"""

PREVIOUS_RULES = """regular_requests:
CPT 0:
iosets_s1_0 {9 10} 400, ref 0
default {*} 10000, ref 0
high_priority_requests:
CPT 0:
iosets_s1_0 {9 10} 400, ref 0
"""


def run_tbf_script(script, tmp_path):
    """Run the script with a fake lctl that logs its calls; return each call's argument list."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "lctl").write_text(LCTL)
    (bin_dir / "lctl").chmod(0o755)
    (tmp_path / "rules").write_text(PREVIOUS_RULES)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "LCTL_LOG": str(tmp_path / "log")}
    env["LCTL_RULES"] = str(tmp_path / "rules")
    subprocess.run(["sh", str(script)], check=True, env=env)
    calls = (tmp_path / "log").read_text().split("---\n")
    return [call.splitlines() for call in calls if call]


def parse_rules(calls, target="ost.OSS.ost_io"):
    """{rule name: (job ids, rate)} from the ``start`` calls; also the other set_param values."""
    rules, others = {}, []
    for call in calls:
        if call[0] != "set_param":
            continue
        key, value = call[1].split("=", 1)
        match = re.fullmatch(r"start (\w+) jobid=\{([^}]*)\} rate=(\d+)", value)
        if key == f"{target}.nrs_tbf_rule" and match:
            rules[match[1]] = (match[2].split(), int(match[3]))
        else:
            others.append((key, value))
    return rules, others


def test_tbf_rates_share_the_capacity_by_priority(recommended):
    rates = tbf_rates(recommended, ["101", "102", "103", "107"], 11100.0)
    assert rates["job_id"].to_list() == ["101", "102", "103", "107"]
    # active sets 0, 1, 2 have priorities 1, 0.1, 0.01; set 1's two jobs split its share
    assert rates["rate"].to_list() == pytest.approx([500.0, 500.0, 100.0, 10000.0])
    assert rates["rate"].sum() == pytest.approx(11100.0)
    per_priority = rates["rate"] * rates["set_active_jobs"] / rates["priority"]
    assert per_priority.to_list() == pytest.approx([per_priority[0]] * 4)
    assert rates["rpc_rate"].to_list() == [500, 500, 100, 10000]


def test_tbf_script_starts_one_rule_per_active_set(recommended, tmp_path):
    (path,) = export(recommended, "tbf", tmp_path, active=[101, "102", "103", "107"], rpc_capacity=11100)
    assert path.name == "iosets-tbf.sh" and stat.S_IMODE(path.stat().st_mode) == 0o755
    text = path.read_text()
    assert "NOT work-conserving" in text and "--active" in text
    calls = run_tbf_script(path, tmp_path)
    rules, others = parse_rules(calls)
    assert rules == {
        "iosets_s0_0": (["107"], 10000),
        "iosets_s1_0": (["101", "102"], 500),
        "iosets_s2_0": (["103"], 100),
    }
    assert others[0] == ("ost.OSS.ost_io.nrs_policies", "tbf jobid")
    assert others[1:] == [("ost.OSS.ost_io.nrs_tbf_rule", "stop iosets_s1_0")]  # the previous run's rule, once
    assert all(re.fullmatch(r"[A-Za-z0-9_]{1,15}", name) for name in rules)
    rates = tbf_rates(recommended, ["101", "102", "103", "107"], 11100)
    per_job = {job: rate for jobs, rate in rules.values() for job in jobs}
    assert per_job == dict(zip(rates["job_id"], rates["rpc_rate"], strict=True))
    assert sum(per_job.values()) <= 11100


def test_tbf_commands_are_shell_words(recommended, tmp_path):
    options = {"active": ["104"], "rpc_capacity": 5000, "target": "mdt.*.mdt", "default_rate": 9}
    (path,) = export(recommended, "tbf", tmp_path, **options)
    lines = [shlex.split(line) for line in path.read_text().splitlines() if line.startswith("lctl set_param 'mdt")]
    assert [words[2] for words in lines] == [
        "mdt.*.mdt.nrs_policies=tbf jobid",
        "mdt.*.mdt.nrs_tbf_rule=change default rate=9",
        "mdt.*.mdt.nrs_tbf_rule=start iosets_s3_0 jobid={104} rate=5000",
    ]


def test_tbf_splits_long_job_lists(tmp_path):
    n = 600
    jobs = pl.DataFrame({"job_id": [f"job{k:012d}" for k in range(n)], "w_iter": [50.0] * n, "alpha_io": [0.001] * n})
    rec = recommend(jobs)
    (path,) = export(rec, "tbf", tmp_path, active=rec["job_id"], rpc_capacity=600000)
    rules, _ = parse_rules(run_tbf_script(path, tmp_path))
    assert len(rules) > 1 and set(rules) == {f"iosets_s2_{k}" for k in range(len(rules))}
    assert sorted(job for jobs, _ in rules.values() for job in jobs) == rec["job_id"].to_list()
    assert {rate for _, rate in rules.values()} == {1000}
    commands = [line for line in path.read_text().splitlines() if "start iosets" in line]
    assert max(len(shlex.split(line)[2].split("=", 1)[1]) for line in commands) <= 4095


def test_tbf_without_active_jobs_only_stops_rules(recommended, tmp_path):
    (path,) = export(recommended, "tbf", tmp_path, active=[], rpc_capacity=100)
    rules, others = parse_rules(run_tbf_script(path, tmp_path))
    assert rules == {} and others[-1] == ("ost.OSS.ost_io.nrs_tbf_rule", "stop iosets_s1_0")


@pytest.mark.parametrize(
    "options, message",
    [
        ({"active": ["101", "999"], "rpc_capacity": 10}, "active job.s. not in the recommendation: 999"),
        ({"active": "101", "rpc_capacity": 10}, "must be a list of ids"),
        ({"active": ["101"], "rpc_capacity": 0}, "rpc_capacity must be a finite number > 0"),
        ({"active": ["101"], "rpc_capacity": 2e6}, "TBF rates must be < 1000000 RPC/s"),
        ({"active": ["101"]}, "the tbf export needs option.s.: rpc_capacity"),
        ({"active": ["101"], "rpc_capacity": 10, "target": "ost; rm -rf /"}, "target must be an lctl service path"),
        ({"active": ["101"], "rpc_capacity": 10, "default_rate": 0}, "default_rate must be an integer"),
        ({"active": ["101"], "rpc_capacity": 10, "rate": 5}, "unknown option.s. for the tbf export: rate"),
    ],
)
def test_tbf_errors(recommended, tmp_path, options, message):
    with pytest.raises(InputError, match=message):
        export(recommended, "tbf", tmp_path, **options)
    assert not list(tmp_path.iterdir())


# ---- cgroup v2 -------------------------------------------------------------------------------------------------------


def apply_cgroup_script(script, root, present):
    """Run the script against a fake cgroup tree holding ``job_<id>`` for the ``present`` jobs."""
    for job in present:
        (root / f"job_{job}").mkdir(parents=True)
        (root / f"job_{job}" / "io.weight").write_text("default 100\n")
    subprocess.run(["sh", str(script)], check=True, env={**os.environ, "CGROUP_ROOT": str(root)})
    return {job: (root / f"job_{job}" / "io.weight").read_text() for job in present}


def test_cgroup_weights_follow_priorities(recommended, tmp_path):
    (path,) = export(recommended, "cgroup", tmp_path / "out")
    assert path == tmp_path / "out" / "iosets-io-weight.sh"
    assert "g = 1: the weights keep the priority ratios" in path.read_text()
    lines = [shlex.split(line) for line in path.read_text().splitlines() if line.startswith("weight ")]
    written = {job: int(w) for _, job, w in lines}
    expected = {"101": 1000, "102": 1000, "103": 100, "104": 10, "105": 1, "106": 1, "107": 10000, "108": 1}
    assert written == expected
    applied = apply_cgroup_script(path, tmp_path / "cg", ["101", "107"])
    assert applied == {"101": "default 1000\n", "107": "default 10000\n"}


def test_cgroup_compresses_spans_beyond_10000():
    priorities = 10.0 ** -np.arange(6)
    weights = cgroup_weights(priorities)
    assert weights.tolist() == [10000, 1585, 251, 40, 6, 1]
    assert np.all(np.diff(weights) < 0)
    assert cgroup_weights(10.0 ** -np.arange(12)).min() == 1
    assert cgroup_weights([0.5, 0.5]).tolist() == [10000, 10000]


def test_cgroup_header_says_when_it_compresses(tmp_path):
    jobs = pl.DataFrame({"job_id": [str(k) for k in range(6)], "w_iter": [10.0**k for k in range(6)]})
    (path,) = export(recommend(jobs, max_request=1024), "cgroup", tmp_path)
    assert "priorities span 1e+05x > 10000x, so g = 0.8" in path.read_text()
    applied = apply_cgroup_script(path, tmp_path / "cg", [str(k) for k in range(6)])
    assert [int(applied[str(k)].split()[1]) for k in range(6)] == [10000, 1585, 251, 40, 6, 1]


# ---- JSON and Lua for Slurm ------------------------------------------------------------------------------------------

# What Recommender.predict_one answers: an (app, user) pair with fewer than 3 jobs of its own gets its app's EWMA;
# lammps: 8, 9, 95 s -> ~21 s, set 1; io500: 0.5 s (confidence 0.9) and 30 s (0.1) disagree -> unsure, conservative.
EXPECTED_APPS = {"lammps": (1, False), "wrf": (3, False), ODD_APP: (4, True), "io500": (4, True)}
EXPECTED_USERS = {
    ("1001", "lammps"): (1, False),
    ("1002", "lammps"): (1, False),
    ("1002", "wrf"): (3, False),
    ("1003", ODD_APP): (4, True),
    ("1003", "io500"): (4, True),
    ("1001", "io500"): (4, True),
}
PRIORITY = {0: 1.0, 1: 0.1, 2: 0.01, 3: 0.001, 4: 0.0001}


def check_document(doc, recommended):
    """A JSON/Lua document against the recommendation (``None`` fields may be absent)."""
    assert doc["version"] == 1 and doc["default"] == {"set": 4, "priority": pytest.approx(1e-4), "conservative": True}
    summary = set_summary(recommended)
    for got, want in zip(doc["sets"], summary.iter_rows(named=True), strict=True):
        assert got == pytest.approx({k: v for k, v in want.items() if v is not None})
    assert {app: (e["set"], e["conservative"]) for app, e in doc["apps"].items()} == EXPECTED_APPS
    users = {(u, a): (e["set"], e["conservative"]) for u, apps in doc["users"].items() for a, e in apps.items()}
    assert users == EXPECTED_USERS
    entries = [*doc["apps"].values(), *(e for apps in doc["users"].values() for e in apps.values())]
    assert all(e["priority"] == pytest.approx(PRIORITY[e["set"]]) for e in entries)
    assert doc["apps"]["wrf"]["n_jobs"] == 2 and doc["users"]["1002"]["lammps"]["n_jobs"] == 1
    for row in recommended.iter_rows(named=True):
        job = doc["jobs"][row["job_id"]]
        for field in ("user", "app", "w_iter", "set", "priority", "conservative", "wfq_weight", "rbfq_weight"):
            assert job.get(field) == (pytest.approx(row[field]) if isinstance(row[field], float) else row[field])
        assert job["rbfq_reservation"] == pytest.approx(row["rbfq_reservation"])


def test_json_document(recommended, tmp_path):
    (path,) = export(recommended, "json", tmp_path / "rec.json", mapping="set-10")
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["policy"] == "set-10" and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", doc["generated"])
    check_document(doc, recommended)
    assert doc["jobs"]["105"]["w_iter"] is None


def lua_to_python(value):
    """Lua tables as dicts, or lists when their keys are 1..n."""
    if not hasattr(value, "items"):
        return value
    items = {k: lua_to_python(v) for k, v in value.items()}
    if items and list(items) == list(range(1, len(items) + 1)):
        return list(items.values())
    return items


def test_lua_table_loads_with_dofile_semantics(recommended, tmp_path):
    (path,) = export(recommended, "lua", tmp_path)
    assert path.name == "iosets.lua"
    doc = lua_to_python(LuaRuntime().execute(path.read_text(encoding="utf-8")))
    check_document(doc, recommended)
    assert "w_iter" not in doc["jobs"]["105"] and "policy" not in doc
    json_doc = json.loads(export(recommended, "json", tmp_path)[0].read_text(encoding="utf-8"))
    assert doc["apps"] == json_doc["apps"] and doc["users"] == json_doc["users"]


@pytest.fixture
def job_submit(recommended, tmp_path):
    """slurm_job_submit from the example job_submit.lua, reading the exported iosets.lua."""
    (path,) = export(recommended, "lua", tmp_path)
    hook = (files("iosets.api") / "hooks" / "slurm" / "job_submit.lua").read_text()
    assert '"/etc/slurm/iosets.lua"' in hook
    lua = LuaRuntime()
    lua.execute("slurm = {SUCCESS = 0, log_error = function(...) error(string.format(...)) end}")
    lua.execute(hook.replace('"/etc/slurm/iosets.lua"', lua_literal(str(path))))

    def submit(uid, name, admin_comment=None):
        job_desc = lua.table_from({"user_id": uid, "name": name, "admin_comment": admin_comment})
        assert lua.globals().slurm_job_submit(job_desc, None, uid) == 0
        return job_desc["admin_comment"]

    return submit


def lua_literal(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


@pytest.mark.parametrize(
    "uid, name, expected",
    [
        (1002.0, "lammps", "iosets set=1 priority=0.1 source=lua:user"),  # the user's own entry first
        (1001.0, "lammps", "iosets set=1 priority=0.1 source=lua:user"),
        (4242.0, "lammps", "iosets set=1 priority=0.1 source=lua:app"),  # then the app's
        (1003.0, ODD_APP, "iosets set=4 priority=0.0001 source=lua:user conservative"),
        (1001.0, "io500", "iosets set=4 priority=0.0001 source=lua:user conservative"),  # unsure: conservative
        (4242.0, "unknown", "iosets set=4 priority=0.0001 source=lua:default conservative"),  # default
        (4242.0, None, "iosets set=4 priority=0.0001 source=lua:default conservative"),
    ],
)
def test_job_submit_hook_tags_jobs(job_submit, uid, name, expected):
    assert job_submit(uid, name) == expected


def test_job_submit_hook_keeps_an_admin_comment(job_submit):
    assert job_submit(1003.0, "io500", "keep") == "keep iosets set=4 priority=0.0001 source=lua:user conservative"


# ---- dispatcher errors -----------------------------------------------------------------------------------------------


def test_unknown_format_lists_the_valid_ones(recommended, tmp_path):
    message = "unknown export format 'slurm'; expected one of agios, tbf, cgroup, json, lua"
    with pytest.raises(InputError, match=message):
        export(recommended, "slurm", tmp_path)
    assert EXPORT_FORMATS == ("agios", "tbf", "cgroup", "json", "lua")


@pytest.mark.parametrize("fmt", EXPORT_FORMATS)
def test_not_a_recommendation(recommended, tmp_path, fmt):
    with pytest.raises(InputError, match="not a recommendation: missing column.s. wfq_weight"):
        export(recommended.drop("wfq_weight"), fmt, tmp_path, active=[], rpc_capacity=1)


@pytest.mark.parametrize("fmt, column", [("json", "app"), ("lua", "user"), ("cgroup", "job_id")])
def test_formats_need_their_columns(recommended, tmp_path, fmt, column):
    with pytest.raises(InputError, match=f"missing column.s. {column}"):
        export(recommended.drop(column), fmt, tmp_path)


def test_repeated_job_ids(recommended, tmp_path):
    with pytest.raises(InputError, match="job_id must be unique; repeated: 101"):
        export(pl.concat([recommended, recommended.head(1)]), "json", tmp_path)


def test_unknown_option(recommended, tmp_path):
    message = "unknown option.s. for the json export: active; expected mapping, recommender"
    with pytest.raises(InputError, match=message):
        export(recommended, "json", tmp_path, active=[])


# ---- render_export: the files as text, what export writes ----------------------------------------------------------

GENERATED = datetime(2024, 5, 1, 12, 30, 5, tzinfo=UTC)
OPTIONS = {
    "agios": {},
    "tbf": {"active": ["101", "104", "107"], "rpc_capacity": 1100.0},
    "cgroup": {},
    "json": {},
    "lua": {},
}


@pytest.mark.parametrize("fmt", EXPORT_FORMATS)
def test_the_rendered_text_is_the_written_file_byte_for_byte(recommended, tmp_path, fmt):
    paths = export(recommended, fmt, tmp_path, generated=GENERATED, **OPTIONS[fmt])
    wfq_path = {"wfq_path": str(paths[-1].absolute())} if fmt == "agios" else {}  # export's default: the file written
    rendered = render_export(recommended, fmt, generated=GENERATED, **OPTIONS[fmt], **wfq_path)
    assert list(rendered) == [path.name for path in paths]
    assert {name: text.encode("utf-8") for name, text in rendered.items()} == {p.name: p.read_bytes() for p in paths}
    assert "2024-05-01T12:30:05Z" in next(iter(rendered.values()))


def test_the_rendered_date_is_shown_in_utc(recommended):
    paris = datetime(2024, 5, 1, 14, 30, 5, tzinfo=timezone(timedelta(hours=2)))
    assert render_export(recommended, "lua", generated=paris) == render_export(recommended, "lua", generated=GENERATED)
    with pytest.raises(InputError, match="generated must be a datetime, got str '2024-05-01'"):
        render_export(recommended, "lua", generated="2024-05-01")


def test_rendering_agios_needs_the_path_wfq_conf_will_have(recommended):
    with pytest.raises(InputError, match="the agios export needs option.s.: wfq_path"):
        render_export(recommended, "agios")
    rendered = render_export(recommended, "agios", wfq_path="/etc/agios/wfq.conf")
    assert 'wfq_conf = "/etc/agios/wfq.conf";' in rendered["agios.conf"]
    assert [int(line) for line in rendered["wfq.conf"].splitlines()] == set_summary(recommended)["wfq_weight"].to_list()


# ---- the document answers as Recommender.predict_one does ------------------------------------------------------------


@pytest.fixture(scope="module")
def site():
    """A generated history with numeric uids (as Darshan records them), its fitted recommender and recommendation."""
    history = make_job_history(800, n_apps=14, n_users=5, random_state=7)
    history = history.with_columns(pl.col("user").str.slice(1).cast(pl.Int64).add(1000).cast(pl.String))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # capped WFQ weights
        recommender = Recommender(mapping="set-2", max_request=4096).fit(history)
        return recommender, recommender.predict(history)


def test_document_entries_are_predict_one(site):
    recommender, recommended = site
    doc = recommendation_document(recommended, generated="now", recommender=recommender)
    assert doc["policy"] == "set-2"
    keys = ("set", "priority", "conservative")
    for app, entry in doc["apps"].items():
        answer = recommender.predict_one(app=app, user="a user never seen")
        assert {k: entry[k] for k in keys} == {k: answer[k] for k in keys}, app
    pairs = [(user, app) for user, apps in doc["users"].items() for app in apps]
    assert len(pairs) == recommended.select("user", "app").n_unique()
    for user, app in pairs:
        answer = recommender.predict_one(app=app, user=user)
        assert {k: doc["users"][user][app][k] for k in keys} == {k: answer[k] for k in keys}, (user, app)
    default = recommender.predict_one(app="never_seen_0", user="nobody")
    assert (doc["default"]["set"], doc["default"]["priority"]) == (default["set"], default["priority"])
    # some pairs have enough runs of their own to differ from their app: the user's entry comes first
    assert any(doc["users"][u][a]["set"] != doc["apps"][a]["set"] for u, a in pairs)


def test_job_submit_hook_gives_predict_ones_answer(site, tmp_path):
    recommender, recommended = site
    (path,) = export(recommended, "lua", tmp_path, recommender=recommender)
    hook = (files("iosets.api") / "hooks" / "slurm" / "job_submit.lua").read_text()
    lua = LuaRuntime()
    lua.execute("slurm = {SUCCESS = 0, log_error = function(...) error(string.format(...)) end}")
    lua.execute(hook.replace('"/etc/slurm/iosets.lua"', lua_literal(str(path))))
    users = recommended["user"].unique().sort().to_list() + ["4242"]
    for user in users:
        for app in [*recommended["app"].unique().sort().to_list(), "never_seen"]:
            job_desc = lua.table_from({"user_id": float(user), "name": app})
            lua.globals().slurm_job_submit(job_desc, None, float(user))
            answer = recommender.predict_one(app=app, user=user)
            if answer["estimate_source"] != "model":  # the model needs what the hook does not send (nprocs...)
                assert job_desc["admin_comment"].startswith(f"iosets set={answer['set']} "), (user, app)


def test_the_default_recommender_is_fitted_on_the_recommendation(site, recommended, tmp_path):
    recommender, recommendation = site
    fitted = recommendation_document(recommendation, generated="now", recommender=recommender)
    refitted = recommendation_document(recommendation, generated="now", mapping="set-2")
    assert refitted["apps"] == fitted["apps"] and refitted["users"] == fitted["users"]
    unfitted = recommendation_document(recommendation, generated="now", recommender=Recommender(mapping="set-2"))
    assert unfitted["users"] == fitted["users"] and unfitted["policy"] == "set-2"
    with pytest.warns(DeprecationWarning, match="mapping="):
        (path,) = export(recommended, "json", tmp_path, policy="set-10")  # the former name of the option
    assert json.loads(path.read_text())["policy"] == "set-10"


def test_a_document_must_agree_with_its_recommendation(site, recommended):
    _, recommendation = site
    with pytest.raises(InputError, match=r"job '.*' is in set \d+, but mapping 'set-10' as fitted puts it in set"):
        recommendation_document(recommendation, generated="now")
    with pytest.raises(InputError, match="mapping 'gmm' differs from the recommender's 'set-10'"):
        recommendation_document(recommended, generated="now", mapping="gmm", recommender=Recommender())
