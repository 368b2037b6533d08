"""Hostile text in names and options: every export refuses it by name, or writes it as inert data.

Scripts run under ``sh`` with a fake ``lctl`` (Python, logging its exact argv) or a fake
cgroup tree; configs are parsed back by independent parsers (libconf, Lua through lupa,
json). Nothing injected may run: a ``PWNED`` file never appears.
"""

import json
import os
import re
import subprocess
import sys
from importlib.resources import files

import libconf
import polars as pl
import pytest
from lupa import LuaRuntime

from iosets.errors import InputError
from iosets.recommender import export, recommend, recommendation_document

HOSTILE = [
    "$(touch PWNED)",
    "`touch PWNED`",
    "a; touch PWNED",
    "${IFS}touch${IFS}PWNED",
    "it's",
    'say "hi"',
    "two\nlines",
    "carriage\rreturn",
    "x]]y",
    "]] os.execute('touch PWNED') --[[",
    "\" .. os.execute('touch PWNED') .. \"",
    "nul\0byte",
    "a b",
    "a}b",
    "{a}",
    "back\\slash",
    "ñandú",
]
NO_NUL = [text for text in HOSTILE if "\0" not in text]


def raises(message, call, *args, **kwargs):
    """``call(*args, **kwargs)`` raises an InputError whose message is exactly ``message``."""
    with pytest.raises(InputError) as error:
        call(*args, **kwargs)
    assert str(error.value) == message


def pwned(folder):
    """Files an injected ``touch PWNED`` would have made (hostile folder names may hold the word)."""
    return [path for path in folder.rglob("PWNED")]


def one_set(job_ids):
    """Jobs all in SET-10's set 1 (w_iter 8 s)."""
    return recommend(pl.DataFrame({"job_id": job_ids, "w_iter": [8.0] * len(job_ids)}))


def job_id_message(job, where):
    return f"job id {job!r} cannot go into {where}: job ids must be letters, digits, '_', '.' or '-'"


# ---- cgroup v2 -------------------------------------------------------------------------------------------------------

CGROUP_DIR = "a cgroup directory name (job_<id>)"


@pytest.mark.parametrize("text", NO_NUL)
def test_cgroup_root_is_one_word(tmp_path, text):
    root = tmp_path / "cg" / text
    (root / "job_1").mkdir(parents=True)
    (path,) = export(one_set(["1"]), "cgroup", tmp_path / "out", root=str(root))
    env = {key: value for key, value in os.environ.items() if key != "CGROUP_ROOT"}
    subprocess.run(["sh", str(path)], check=True, cwd=tmp_path, env=env)
    assert (root / "job_1" / "io.weight").read_text() == "default 10000\n"
    assert pwned(tmp_path) == []


@pytest.mark.parametrize(
    "root, message",
    [
        ("/sys/fs/cgroup/nul\0byte", "root cannot hold a NUL byte, got '/sys/fs/cgroup/nul\\x00byte'"),
        ("", "root must be an absolute path (the parent of the job_<id> cgroups), got ''"),
        (
            "cg/$(touch PWNED)",
            "root must be an absolute path (the parent of the job_<id> cgroups), got 'cg/$(touch PWNED)'",
        ),
    ],
)
def test_cgroup_refuses_roots(tmp_path, root, message):
    raises(message, export, one_set(["1"]), "cgroup", tmp_path, root=root)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("job", HOSTILE + ["../x", "a/b", "", "*"])
def test_cgroup_refuses_job_ids_that_are_not_names(tmp_path, job):
    raises(job_id_message(job, CGROUP_DIR), export, one_set([job]), "cgroup", tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_cgroup_odd_but_allowed_job_ids(tmp_path):
    jobs = ["1234_5", "a.b-c", "..", "-n"]
    (path,) = export(one_set(jobs), "cgroup", tmp_path / "out")
    root = tmp_path / "cg"
    for job in jobs:
        (root / f"job_{job}").mkdir(parents=True)
    subprocess.run(["sh", str(path)], check=True, cwd=tmp_path, env={**os.environ, "CGROUP_ROOT": str(root)})
    assert {job: (root / f"job_{job}" / "io.weight").read_text() for job in jobs} == dict.fromkeys(
        jobs, "default 10000\n"
    )


# ---- Lustre TBF ------------------------------------------------------------------------------------------------------

FAKE_LCTL = """#!{python}
import json, os, sys
with open(os.environ["LCTL_LOG"], "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\\n")
if sys.argv[1] == "get_param":
    sys.stdout.write(open(os.environ["LCTL_RULES"]).read())
"""

HOSTILE_RULES = """regular_requests:
CPT 0:
iosets_$(touch PWNED) {1} 5, ref 0
iosets_* {1} 5, ref 0
iosets_a;touch PWNED {1} 5, ref 0
iosets_ok {9 10} 400, ref 0
default {*} 10000, ref 0
"""


def lctl_calls(script, tmp_path):
    """Run ``script`` with a fake lctl; the exact argv of each call."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "lctl").write_text(FAKE_LCTL.format(python=sys.executable))
    (bin_dir / "lctl").chmod(0o755)
    (tmp_path / "rules").write_text(HOSTILE_RULES)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "LCTL_LOG": str(tmp_path / "log")}
    subprocess.run(["sh", str(script)], check=True, cwd=tmp_path, env={**env, "LCTL_RULES": str(tmp_path / "rules")})
    return [json.loads(line) for line in (tmp_path / "log").read_text().splitlines()]


def test_tbf_lctl_gets_exactly_the_intended_arguments(tmp_path):
    jobs = ["1234_5", "a.b-c", "..", "-n", "x"]
    (path,) = export(one_set(jobs), "tbf", tmp_path / "out", active=jobs, rpc_capacity=1000, default_rate=7)
    rule = "ost.OSS.ost_io.nrs_tbf_rule"
    assert lctl_calls(path, tmp_path) == [
        ["set_param", "ost.OSS.ost_io.nrs_policies=tbf jobid"],
        ["get_param", "-n", rule],
        ["set_param", f"{rule}=stop iosets_ok"],  # the server's other iosets_ names are not rule names: left alone
        ["set_param", f"{rule}=change default rate=7"],
        ["set_param", f"{rule}=start iosets_s1_0 jobid={{1234_5 a.b-c .. -n x}} rate=200"],
    ]
    assert pwned(tmp_path) == []


@pytest.mark.parametrize("job", HOSTILE + ["*", "dd.*"])
def test_tbf_refuses_job_ids_that_break_a_rule(tmp_path, job):
    where = "a TBF rule (jobid={...})"
    raises(job_id_message(job, where), export, one_set([job]), "tbf", tmp_path, active=[job], rpc_capacity=10)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("target", [*HOSTILE, "-n.ost", "*.ost_io", ""])
def test_tbf_refuses_targets(tmp_path, target):
    message = f"target must be an lctl service path such as 'ost.OSS.ost_io', got {target!r}"
    raises(message, export, one_set(["1"]), "tbf", tmp_path, active=["1"], rpc_capacity=10, target=target)


@pytest.mark.parametrize(
    "options, message",
    [
        (
            {"default_rate": "5; touch PWNED"},
            "default_rate must be an integer in 1..999999 RPC/s, got '5; touch PWNED'",
        ),
        ({"default_rate": 5.0}, "default_rate must be an integer in 1..999999 RPC/s, got 5.0"),
        ({"rpc_capacity": "1e3"}, "rpc_capacity must be a finite number > 0, got '1e3'"),
        ({"rpc_capacity": float("nan")}, "rpc_capacity must be a finite number > 0, got nan"),
        ({"rpc_capacity": float("inf")}, "rpc_capacity must be a finite number > 0, got inf"),
    ],
)
def test_tbf_refuses_rates(tmp_path, options, message):
    raises(message, export, one_set(["1"]), "tbf", tmp_path, **{"active": ["1"], "rpc_capacity": 10, **options})


# ---- AGIOS (libconfig) -----------------------------------------------------------------------------------------------

CONTROL = [text for text in HOSTILE if re.search(r"[\x00-\x1f]", text)] + ["tab\there", "\x7f"]


@pytest.mark.parametrize("text", [text for text in HOSTILE if text not in CONTROL])
def test_agios_wfq_path_is_one_libconfig_string(tmp_path, text):
    wfq_path = f"/etc/agios/{text}"
    conf_path, _ = export(one_set(["1"]), "agios", tmp_path, wfq_path=wfq_path)
    conf = libconf.loads(conf_path.read_text(encoding="utf-8"))
    assert conf["library_options"]["wfq_conf"] == wfq_path
    assert len(conf["library_options"]) == 16 and list(conf) == ["library_options", "iosets"]
    # the comment's line for builds that read the environment is one sh word too
    (word,) = re.findall(r"^# AGIOS WFQ builds .*: export WFQ_CONF=(.*)$", conf_path.read_text(), re.M)
    shell = subprocess.run(
        ["sh", "-c", f'export WFQ_CONF={word}; printf %s "$WFQ_CONF"'], cwd=tmp_path, capture_output=True, check=True
    )
    assert shell.stdout.decode() == wfq_path
    assert pwned(tmp_path) == []


@pytest.mark.parametrize("text", CONTROL)
def test_agios_refuses_control_characters(tmp_path, text):
    wfq_path = f"/etc/{text}"
    message = f"wfq_path cannot hold control characters (newline, tab, NUL...), got {wfq_path!r}"
    raises(message, export, one_set(["1"]), "agios", tmp_path, wfq_path=wfq_path)
    assert list(tmp_path.iterdir()) == []


def test_agios_refuses_an_empty_path(tmp_path):
    raises("wfq_path must be a file path, got ''", export, one_set(["1"]), "agios", tmp_path, wfq_path="")


# ---- JSON and Lua for Slurm ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hostile_rec():
    """Job ids, users and apps from HOSTILE (each user runs each of its apps twice)."""
    n = len(HOSTILE)
    jobs = pl.DataFrame(
        {
            "job_id": [f"{text}#{k}" for k in range(2) for text in HOSTILE],
            "user": HOSTILE * 2,
            "app": HOSTILE[1:] + HOSTILE[:1] + HOSTILE[1:] + HOSTILE[:1],
            "start": [float(k) for k in range(2 * n)],
            "w_iter": [10.0 ** (k % 4) for k in range(2 * n)],
        }
    )
    return recommend(jobs)


def check_hostile_document(doc, rec):
    """Every key and value of the document is the text given."""
    assert set(doc["jobs"]) == set(rec["job_id"])
    for row in rec.iter_rows(named=True):
        job = doc["jobs"][row["job_id"]]
        assert (job["user"], job["app"], job["set"]) == (row["user"], row["app"], row["set"])
    assert set(doc["apps"]) == set(HOSTILE)
    assert {(user, app) for user, apps in doc["users"].items() for app in apps} == set(rec.select("user", "app").rows())


def test_json_gives_back_every_string(hostile_rec, tmp_path):
    (path,) = export(hostile_rec, "json", tmp_path)
    text = path.read_text(encoding="utf-8")
    assert text.isascii()
    check_hostile_document(json.loads(text), hostile_rec)


def lua_to_python(value):
    """Lua tables as dicts (nested), other values as they are."""
    return {k: lua_to_python(v) for k, v in value.items()} if hasattr(value, "items") else value


def test_lua_gives_back_every_string(hostile_rec, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (path,) = export(hostile_rec, "lua", tmp_path)
    lua = LuaRuntime()
    doc = lua_to_python(lua.eval(f"dofile({json.dumps(str(path))})"))  # a JSON string of a path is a Lua string
    check_hostile_document(doc, hostile_rec)
    assert doc == lua_to_python(lua.execute(path.read_text(encoding="utf-8")))
    assert pwned(tmp_path) == []


def test_job_submit_hook_looks_hostile_apps_up(hostile_rec, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (path,) = export(hostile_rec, "lua", tmp_path)
    apps = recommendation_document(hostile_rec, generated="now")["apps"]
    hook = (files("iosets.api") / "hooks" / "slurm" / "job_submit.lua").read_text()
    lua = LuaRuntime()
    lua.execute("slurm = {SUCCESS = 0, log_error = function(...) error(string.format(...)) end}")
    lua.execute(hook.replace('"/etc/slurm/iosets.lua"', json.dumps(str(path))))
    for app in HOSTILE:
        job_desc = lua.table_from({"user_id": 4242, "name": app})
        assert lua.globals().slurm_job_submit(job_desc, None, 4242) == 0
        assert job_desc["admin_comment"].startswith(f"iosets set={apps[app]['set']} "), app
    assert pwned(tmp_path) == []


@pytest.mark.parametrize("fmt", ["json", "lua"])
def test_slurm_documents_refuse_unknown_mapping_names(hostile_rec, tmp_path, fmt):
    message = "unknown mapping 'set-10\\n-- x'; expected one of set-10, set-b, gmm or set-<base>"
    raises(message, export, hostile_rec, fmt, tmp_path, mapping="set-10\n-- x")


@pytest.mark.parametrize(
    "text, error",
    [
        ("return {}", "not an iosets document (version 1)"),
        ("return {version = 1, users = {}, apps = 'x', default = {}}", "not an iosets document (version 1)"),
        ("return {", "unexpected symbol"),
    ],
)
def test_job_submit_hook_survives_a_file_that_is_not_a_document(tmp_path, text, error):
    path = tmp_path / "iosets.lua"
    path.write_text(text)
    hook = (files("iosets.api") / "hooks" / "slurm" / "job_submit.lua").read_text()
    lua = LuaRuntime()
    lua.execute(
        "logged = {}; slurm = {SUCCESS = 0, log_error = function(...) logged[#logged + 1] = string.format(...) end}"
    )
    lua.execute(hook.replace('"/etc/slurm/iosets.lua"', json.dumps(str(path))))
    job_desc = lua.table_from({"user_id": 4242, "name": "app", "admin_comment": "keep"})
    assert lua.globals().slurm_job_submit(job_desc, None, 4242) == 0
    assert job_desc["admin_comment"] == "keep"
    (message,) = lua.globals().logged.values()
    assert message.startswith(f"iosets: cannot load {path}: ") and error in message
