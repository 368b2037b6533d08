"""The shipped scheduler hooks: Slurm prolog/epilog (subprocesses, fake scontrol), job_submit.lua, Flux, PBS."""

import base64
import calendar
import importlib.util
import json
import os
import re
import runpy
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest
from lupa import lua51, lua54

import iosets.api
from iosets.analyzer._ingest._app_name import app_name
from iosets.api import client

from .hookkit import (
    CLIENT,
    HOOKS,
    SLURM_HOOKS,
    StubService,
    closed_port,
    fake_scontrol,
    give,
    learned_jobs,
    open_folder,
    scontrol_calls,
    wait_for,
)

APP_NAME = Path(iosets.__file__).parent / "analyzer" / "_ingest" / "_app_name.py"
DARSHAN_LOG = Path(__file__).parents[1] / "data" / "darshan" / "jlbez_IO_test5.darshan"
LUA_COMMENT = "keep iosets set=4 priority=0.0001 source=lua:default conservative"
LOG_UID = 1001 if os.geteuid() == 0 else os.geteuid()  # the epilog reads a log only as (and if owned by) its user


def load_module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


slurmctld = load_module(SLURM_HOOKS / "iosets_slurmctld.py", "iosets_slurmctld_under_test")


def run_hook(name: str, env: dict, folder: Path = SLURM_HOOKS) -> subprocess.CompletedProcess:
    return subprocess.run([str(folder / name)], env=env, capture_output=True, text=True, timeout=60)


def job_env(fake: dict, url: str, token: str | None = None, **slurm) -> dict:
    """A slurmctld-like environment: the job's SLURM_* variables, the fake scontrol first on PATH, the service,
    the epilog's spool in the fake scontrol's folder.

    The client waits up to 30 s: a live service's first answer may wait for a refit.
    """
    spool = str(Path(fake["FAKE_SCONTROL_LOG"]).parent / "spool")  # beside the fake scontrol, never /var/spool
    env = {**fake, "IOSETS_URL": url, "IOSETS_TIMEOUT": "30", "TZ": "UTC", "SLURM_JOB_ID": "77", "IOSETS_SPOOL": spool}
    env |= {"SLURM_JOB_UID": "1001", "SLURM_JOB_GID": "1001", "SLURM_JOB_USER": "alice", "SLURM_JOB_NAME": "A", **slurm}
    return env | ({"IOSETS_TOKEN": token} if token else {})


@pytest.fixture
def learned(serve):
    """A live service that has seen 20 jobs of app A (user 1001, w_iter about 40 s)."""
    server = serve()
    for row in learned_jobs("A", "1001"):
        assert server.post_job(row).status_code == 201
    return server


# ---- Slurm prolog ----------------------------------------------------------------------------------------------------


def test_prolog_stamps_the_services_answer(learned, tmp_path):
    fake = fake_scontrol(tmp_path / "bin", admin_comment=LUA_COMMENT)
    done = run_hook("prolog_slurmctld", job_env(fake, learned.url, learned.token))
    assert (done.returncode, done.stderr) == (0, "")
    expected = "keep iosets set=2 priority=0.01 source=history"  # SET-10: round(log10 40) = 2, priority 10^-2
    update = ["update", "JobId=77", f"AdminComment={expected}"]
    assert scontrol_calls(fake) == [["show", "job", "77"], ["write", "batch_script", "77", "-"], update]
    served = learned.get("/v1/recommendation", app="A", user="1001", nprocs=16, requested_time=93600.0).json()
    assert expected.endswith(client.tag(served))


SCRIPT = "#!/bin/bash\n#SBATCH -J wrap\nmodule load py\ncd run && srun -n 16 python3 -u '/home/u/my app.py' --lr 1\n"


def test_prolog_asks_with_the_jobs_fields(tmp_path):
    stub = StubService()
    try:
        fake = fake_scontrol(tmp_path / "bin", SCRIPT, tasks="16", time_limit="1-02:00:00", name="wrap")
        done = run_hook("prolog_slurmctld", job_env(fake, stub.url, "iosets_r", SLURM_JOB_NAME="wrap"))
    finally:
        stub.close()
    assert (done.returncode, done.stderr) == (0, "")
    (request,) = stub.requests
    # the app key: the script srun runs, as Darshan names it, not the job's name; 1-02:00:00 = 93600 s; NumTasks=16
    path = "/v1/recommendation?app=my+app.py&user=1001&nprocs=16&requested_time=93600.0&job_id=77"
    assert request["path"] == path
    assert request["headers"]["Authorization"] == "Bearer iosets_r"
    assert scontrol_calls(fake)[2] == ["update", "JobId=77", "AdminComment=iosets set=3 priority=0.001 source=model"]


def test_a_job_without_a_batch_script_is_keyed_by_its_executable(tmp_path):
    stub = StubService()
    try:  # srun python3 train.py: Slurm's record keeps the executable alone (Command=, BatchFlag=0)
        fake = fake_scontrol(tmp_path / "bin", "never read", batch="0", command="/usr/bin/python3", name="train")
        done = run_hook("prolog_slurmctld", job_env(fake, stub.url, SLURM_JOB_NAME="train"))
    finally:
        stub.close()
    assert (done.returncode, done.stderr) == (0, "")
    assert stub.requests[0]["path"].startswith("/v1/recommendation?app=python3&")
    assert [call[0] for call in scontrol_calls(fake)] == ["show", "update"]  # no batch script asked for


def test_prolog_with_the_service_down_keeps_the_submit_time_tag(tmp_path):
    fake = fake_scontrol(tmp_path / "bin", admin_comment=LUA_COMMENT)
    done = run_hook("prolog_slurmctld", job_env(fake, f"http://127.0.0.1:{closed_port()}"))
    assert done.returncode == 0
    assert done.stderr.startswith("iosets: job 77: tag kept: http://127.0.0.1:")
    assert done.stderr.endswith("Connection refused\n")  # at once, no timeout waited for
    assert [call[0] for call in scontrol_calls(fake)] == ["show", "write"]  # no update: job_submit.lua's tag stays


def test_prolog_with_the_service_down_and_no_tag_stamps_the_default_answer(tmp_path):
    fake = fake_scontrol(tmp_path / "bin", admin_comment="site text")
    done = run_hook("prolog_slurmctld", job_env(fake, f"http://127.0.0.1:{closed_port()}"))
    assert done.returncode == 0 and done.stderr.startswith("iosets: job 77: default answer: http://127.0.0.1:")
    comment = "site text iosets set=99 priority=1e-99 source=unavailable conservative"
    assert scontrol_calls(fake)[2] == ["update", "JobId=77", f"AdminComment={comment}"]


def test_prolog_with_a_hung_service_keeps_the_tag_within_its_deadline(tmp_path):
    stub = StubService(hold=True)  # answers nothing: only the prolog's deadline ends its wait
    fake = fake_scontrol(tmp_path / "bin", admin_comment=LUA_COMMENT)
    env = job_env(fake, stub.url, IOSETS_PROLOG_TIMEOUT="2")  # IOSETS_TIMEOUT is 30: the deadline is shorter
    try:
        done = run_hook("prolog_slurmctld", env)
    finally:
        stub.close()
    assert done.returncode == 0 and len(stub.requests) == 1
    # 2 s less the 1 s kept for scontrol update, less what scontrol took: under 1 s, never IOSETS_TIMEOUT's 30
    kept = rf"iosets: job 77: tag kept: {stub.url}/v1/recommendation: no answer within 0\.\d+ s\n"
    assert re.fullmatch(kept, done.stderr)
    assert [call[0] for call in scontrol_calls(fake)] == ["show", "write"]


def test_copied_hooks_read_iosets_conf(tmp_path):
    """The site's layout: scripts, helper and client.py in one folder, settings in iosets.conf, a bare environment."""
    folder = tmp_path / "etc"
    folder.mkdir()
    for name in ("prolog_slurmctld", "epilog_slurmctld", "iosets_slurmctld.py", "app_key.py"):
        shutil.copy2(SLURM_HOOKS / name, folder / name)
    shutil.copy2(CLIENT, folder / "client.py")
    shutil.copy2(APP_NAME, folder / "app_name.py")
    (folder / "token").write_text("iosets_fromconf\n")
    fake = fake_scontrol(tmp_path / "bin", "#!/bin/sh\nsrun -n 2 /opt/wrf/bin/wrf.exe namelist\n")
    stub = StubService()
    conf = [f"# iosets hooks\nIOSETS_URL={stub.url}", f"IOSETS_TOKEN_FILE={folder / 'token'}", f"PATH={fake['PATH']}"]
    conf.append("IOSETS_TIMEOUT=30")  # the stub answers at once: no timeout race
    (folder / "iosets.conf").write_text("\n".join([*conf, "not a setting", ""]))
    env = {"SLURM_JOB_ID": "5", "SLURM_JOB_UID": "1002", "SLURM_JOB_NAME": "wrf"}
    env |= {k: fake[k] for k in ("FAKE_SCONTROL_LOG", "FAKE_SCONTROL_SHOW", "FAKE_SCONTROL_SCRIPT")}
    try:
        done = run_hook("prolog_slurmctld", env, folder)
    finally:
        stub.close()
    assert (done.returncode, done.stderr) == (0, "")
    (request,) = stub.requests
    assert request["path"].startswith("/v1/recommendation?app=wrf.exe&user=1002&nprocs=16&")
    assert request["headers"]["Authorization"] == "Bearer iosets_fromconf"
    assert not (folder / "__pycache__").exists()


def test_a_hook_that_crashes_lets_the_job_go_on(tmp_path):
    done = run_hook("prolog_slurmctld", {"PATH": "/usr/bin:/bin"})  # no SLURM_JOB_ID at all
    assert done.returncode == 0 and done.stderr == "iosets: prolog failed: KeyError: 'SLURM_JOB_ID'\n"
    done = run_hook("epilog_slurmctld", {"PATH": "/usr/bin:/bin"})  # the epilog says "not posted" to slurmctld's log
    assert done.returncode == 4 and done.stderr == "iosets: epilog failed: KeyError: 'SLURM_JOB_ID'\n"


@pytest.mark.parametrize(
    "comment, expected",
    [
        ("", "NEW"),
        (LUA_COMMENT, "keep NEW"),
        ("a iosets set=1 priority=0.1 source=lua:app b iosets set=99 priority=1e-99 source=unavailable", "a b NEW"),
    ],
)
def test_retag_replaces_earlier_tags(comment, expected):
    assert slurmctld.retag(comment, "NEW") == expected


def test_scontrol_fields():
    fields = slurmctld.parse_job(SHOW_SAMPLE)
    assert fields["Command"] == "/home/my jobs/run.sh" and fields["AdminComment"] == "x iosets set=1 priority=0.1"
    assert (fields["NumTasks"], fields["JobName"], fields["UserId"]) == ("4", "A", "alice(1001)")
    assert [slurmctld.seconds(t) for t in ("1-02:00:00", "02:00:00", "30:00", "UNLIMITED", None)] == [
        93600.0,
        7200.0,
        1800.0,
        None,
        None,
    ]


SHOW_SAMPLE = """JobId=3 JobName=A
   UserId=alice(1001) GroupId=alice(1001) MCS_label=N/A
   NumNodes=1 NumCPUs=4 NumTasks=4 CPUs/Task=1 ReqB:S:C:T=0:0:*:*
   Command=/home/my jobs/run.sh
   AdminComment=x iosets set=1 priority=0.1 
"""


# ---- Slurm epilog ----------------------------------------------------------------------------------------------------


def test_epilog_posts_the_finished_job(learned, tmp_path):
    fake = fake_scontrol(tmp_path / "bin", start="2026-11-23T16:29:42", end="2026-11-23T16:31:12")
    done = run_hook("epilog_slurmctld", job_env(fake, learned.url, learned.token, SLURM_JOB_ID="88"))
    assert (done.returncode, done.stderr) == (0, "")
    row = learned.get("/v1/jobs/88").json()
    start = calendar.timegm((2026, 11, 23, 16, 29, 42))  # TZ=UTC in the hook's environment
    expected = {"job_id": "88", "user": "1001", "app": "A", "nprocs": 16, "start": start, "end": start + 90.0}
    assert {key: row[key] for key in expected} == expected and row["runtime"] == 90.0
    again = run_hook("epilog_slurmctld", job_env(fake, learned.url, learned.token, SLURM_JOB_ID="88"))
    assert again.returncode == 0 and len(learned.get("/v1/jobs", app="A").json()["jobs"]) == 21


@pytest.fixture
def user_logs():
    """A log folder of the job's user (``LOG_UID``), in a folder every user may enter; its parent."""
    with open_folder() as folder:
        (folder / "logs").mkdir()
        give(folder / "logs", LOG_UID)
        yield folder


def log_env(fake: dict, server, **slurm) -> dict:
    ids = {"SLURM_JOB_UID": str(LOG_UID), "SLURM_JOB_GID": str(LOG_UID)}
    return job_env(fake, server.url, server.token, SLURM_JOB_ID="88", IOSETS_POST_TIMEOUT="120", **ids, **slurm)


def test_epilog_posts_the_darshan_log_of_the_pattern(learned, tmp_path, user_logs):
    logs = user_logs / "logs" / "alice"
    logs.mkdir()
    give(logs, LOG_UID)
    name = "alice_ior_id88-4711_11-23-1234.darshan"
    give(Path(shutil.copy(DARSHAN_LOG, logs / name)), LOG_UID)
    give(Path(shutil.copy(DARSHAN_LOG, logs / "alice_ior_id880-1_11-23-1.darshan")), LOG_UID)  # job 880, not 88
    fake = fake_scontrol(tmp_path / "bin", nodes="3")
    env = log_env(fake, learned)
    env["IOSETS_DARSHAN_PATTERN"] = str(user_logs / "logs" / "%u" / "*_id%j-*.darshan")
    done = run_hook("epilog_slurmctld", env)
    assert (done.returncode, done.stderr) == (0, "")
    row = learned.get("/v1/jobs/88").json()
    assert (row["job_id"], row["path"], row["nodes"]) == ("88", name, 3) and row["source"] is not None
    assert scontrol_calls(fake) == [["show", "job", "88"]]  # the log says the rest, not the node count


def test_epilog_posts_the_log_without_nodes_when_the_record_is_not_read_in_time(learned, tmp_path, user_logs):
    log = give(Path(shutil.copy(DARSHAN_LOG, user_logs / "logs" / "88.darshan")), LOG_UID)
    fake = fake_scontrol(tmp_path / "bin", nodes="3")
    env = log_env(fake, learned, FAKE_SCONTROL_HANG="show job")
    env["IOSETS_DARSHAN_PATTERN"] = str(user_logs / "logs" / "%j.darshan")
    done = run_hook("epilog_slurmctld", env)
    # the record got RECORD_TIME (1 s) of the epilog's 10, never scontrol's own 5 s; the log went without it
    hung = r"iosets: scontrol show job 88: Command '\['scontrol', 'show', 'job', '88'\]' timed out after "
    hung += r"(0\.\d+|1\.0) seconds\n"
    assert done.returncode == 0 and re.fullmatch(hung, done.stderr)
    row = learned.get("/v1/jobs/88").json()
    assert (row["job_id"], row["path"], row["nodes"]) == ("88", log.name, None) and row["source"] is not None
    assert scontrol_calls(fake) == [["show", "job", "88"]]


def test_epilog_falls_back_to_the_row_when_the_log_is_refused(learned, tmp_path, user_logs):
    log = user_logs / "logs" / "88.darshan"
    log.write_bytes(DARSHAN_LOG.read_bytes()[:1000])
    give(log, LOG_UID)
    fake = fake_scontrol(tmp_path / "bin", start="2026-11-23T16:29:42", end="2026-11-23T16:29:52")
    env = log_env(fake, learned)
    env["IOSETS_DARSHAN_PATTERN"] = str(user_logs / "logs" / "%j.darshan")
    done = run_hook("epilog_slurmctld", env)
    assert done.returncode == 0 and done.stderr.startswith(f"iosets: job 88: log {log} refused: HTTP 422: ")
    row = learned.get("/v1/jobs/88").json()
    assert (row["app"], row["runtime"], row["path"]) == ("A", 10.0, None)


def test_epilog_posts_a_job_without_a_log_under_its_app_key(learned, tmp_path):
    script = "#!/bin/sh\n# This script was created by sbatch --wrap.\n\nmpirun -np 16 --bind-to core /opt/bin/A -i x\n"
    fake = fake_scontrol(tmp_path / "bin", script, name="wrap", start="2026-11-23T16:29:42", end="2026-11-23T16:29:52")
    env = job_env(fake, learned.url, learned.token, SLURM_JOB_ID="88", SLURM_JOB_NAME="wrap")
    done = run_hook("epilog_slurmctld", env)
    assert (done.returncode, done.stderr) == (0, "")
    row = learned.get("/v1/jobs/88").json()
    assert (row["app"], row["user"], row["nprocs"], row["runtime"], row["w_iter"]) == ("A", "1001", 16, 10.0, None)
    assert len(learned.get("/v1/jobs", app="A").json()["jobs"]) == 21  # beside the 20 Darshan-like rows of A


def test_epilog_with_the_service_down_exits_3_for_slurmctlds_log(tmp_path):
    fake = fake_scontrol(tmp_path / "bin", end="2026-11-23T16:31:12")
    done = run_hook("epilog_slurmctld", job_env(fake, f"http://127.0.0.1:{closed_port()}", SLURM_JOB_ID="88"))
    assert done.returncode == slurmctld.EXIT_UNREACHABLE == 3
    assert done.stderr.startswith("iosets: job 88: not posted: http://127.0.0.1:")


def test_epilog_refused_exits_4(tmp_path):
    stub = StubService((422, {"detail": "app: too long"}))
    fake = fake_scontrol(tmp_path / "bin", end="2026-11-23T16:31:12")
    try:
        done = run_hook("epilog_slurmctld", job_env(fake, stub.url, SLURM_JOB_ID="88"))
    finally:
        stub.close()
    assert done.returncode == slurmctld.EXIT_NOT_POSTED == 4
    assert done.stderr == "iosets: job 88: not posted: HTTP 422: app: too long\n"


def test_epilog_with_a_hung_service_ends_within_its_deadline(tmp_path):
    stub = StubService(hold=True)
    fake = fake_scontrol(tmp_path / "bin", end="2026-11-23T16:31:12")
    env = job_env(fake, stub.url, SLURM_JOB_ID="88", IOSETS_POST_TIMEOUT="30", IOSETS_EPILOG_TIMEOUT="1.5")
    try:
        done = run_hook("epilog_slurmctld", env)
    finally:
        stub.close()
    assert done.returncode == 3 and len(stub.requests) == 1
    # the post got what the deadline left (under 1.5 s less the spool's 0.5 s), never IOSETS_POST_TIMEOUT's 30
    lost = rf"iosets: job 88: not posted: {stub.url}/v1/jobs: no answer within 0\.\d+ s\n"
    spool = re.escape(str(tmp_path / "bin" / "spool"))
    spooled = rf"iosets: job 88: spooled as {spool}/\d{{20}}-\d+-88\.json: posted when the service answers\n"
    assert re.fullmatch(lost + spooled, done.stderr)


def test_darshan_pattern_expansion(tmp_path):
    for name in ("bob_x_id7-1.darshan", "bob_x_id7-2.darshan", "bob_x_id77-1.darshan", "100_[7].darshan"):
        (tmp_path / name).touch()
    env = {"SLURM_JOB_USER": "bob", "SLURM_JOB_UID": "100", "SLURM_JOB_ID": "7"}
    assert slurmctld.darshan_logs(f"{tmp_path}/%u_*_id%j-*.darshan", env) == [
        f"{tmp_path}/bob_x_id7-1.darshan",
        f"{tmp_path}/bob_x_id7-2.darshan",
    ]
    assert slurmctld.darshan_logs(f"{tmp_path}/%U_[%j].darshan", env) == []  # [ ] of the pattern stay a class
    assert slurmctld.darshan_logs(f"{tmp_path}/%U_?%j?.darshan", env) == [f"{tmp_path}/100_[7].darshan"]


# ---- job_submit.lua reading the file the service writes --------------------------------------------------------------


def lua_hook(runtime_module, check: int = 2):
    """The shipped job_submit.lua (reading $IOSETS_LUA) in a fresh Lua with a fake ``slurm``; (runtime, submit)."""
    lua = runtime_module.LuaRuntime()
    lua.execute(
        "logged = {}; slurm = {SUCCESS = 0, log_error = function(...) logged[#logged + 1] = string.format(...) end}"
    )
    source = (SLURM_HOOKS / "job_submit.lua").read_text().replace("IOSETS_CHECK = 2", f"IOSETS_CHECK = {check}")
    lua.execute(source)

    def submit(uid, name, admin_comment=None, script=None):
        job_desc = lua.table_from({"user_id": uid, "name": name, "admin_comment": admin_comment, "script": script})
        assert lua.globals().slurm_job_submit(job_desc, None, uid) == 0
        return job_desc["admin_comment"]

    return lua, submit


@pytest.mark.parametrize("runtime_module", [lua51, lua54], ids=["lua5.1", "lua5.4"])
def test_job_submit_lua_gives_the_services_answer(serve, tmp_path, monkeypatch, runtime_module):
    lua_out = tmp_path / "slurm" / "iosets.lua"
    lua_out.parent.mkdir()
    server = serve(lua_out=lua_out)
    for row in learned_jobs("A", "1001"):
        server.post_job(row)
    wait_for("the --lua-out file with app A", lambda: lua_out.exists() and '["A"]' in lua_out.read_text())
    monkeypatch.setenv("IOSETS_LUA", str(lua_out))
    _, submit = lua_hook(runtime_module)

    def served(app, user):
        return client.tag(server.get("/v1/recommendation", app=app, user=user).json())

    assert served("A", "1001") == "iosets set=2 priority=0.01 source=history"
    assert submit(1001, "A") == "iosets set=2 priority=0.01 source=lua:user"
    assert submit(4242, "A", "keep") == "keep " + served("A", "4242").replace("source=history", "source=lua:app")
    default = served("never_seen", "4242")
    assert default.startswith("iosets set=") and " source=default conservative" in default
    assert submit(4242, "never_seen") == default.replace("source=default", "source=lua:default")


@pytest.mark.parametrize("runtime_module", [lua51, lua54], ids=["lua5.1", "lua5.4"])
def test_job_submit_lua_tags_from_an_empty_store(serve, tmp_path, monkeypatch, runtime_module):
    lua_out = tmp_path / "slurm" / "iosets.lua"
    server = serve(lua_out=lua_out)
    wait_for("the --lua-out file", lua_out.exists)  # written at start, before any job is stored
    monkeypatch.setenv("IOSETS_LUA", str(lua_out))
    lua, submit = lua_hook(runtime_module)
    served = server.get("/v1/recommendation", app="lmp", user="1001").json()
    assert client.tag(served) == "iosets set=99 priority=1e-99 source=default conservative"
    assert (served["set"], served["priority"]) == (client.DEFAULT_SET, 10.0**-client.DEFAULT_SET)
    down = client.default_answer(environ={})  # what the hooks stamp when the service cannot answer
    assert (down["set"], down["priority"], down["conservative"]) == (served["set"], served["priority"], True)
    assert submit(1001, "lmp", "keep") == "keep iosets set=99 priority=1e-99 source=lua:default conservative"
    assert list(lua.globals().logged.values()) == []  # no "cannot load"


APP_KEYS = {  # batch script -> the app key (what app_name gives the program Darshan would record)
    "#!/bin/sh\n# This script was created by sbatch --wrap.\n\nsleep 1\n": "sleep",
    "#!/bin/bash\n#SBATCH -J named\nmodule load x\nexport OMP=4\nsrun -n 1 /opt/lammps/bin/lmp -in in.lj\n": "lmp",
    "mpirun -np 4 --bind-to core ./ior -w": "ior",
    "for i in 1 2; do srun $EXE; done\nsrun -N2 --ntasks-per-node 4 python3 -u /home/u/dlio/main.py w=u": "main.py",
    "cd d && python -m pkg.mod": "pkg.mod",
    "export A=1\n./a.out | tee log": "a.out",
    "srun --mpi=pmix -l env OMP_NUM_THREADS=4 julia-1.9 -t4 sim.jl": "sim.jl",
    "java -cp lib.jar -jar /opt/x/app.jar": "app.jar",
    "Rscript -e 'print(1)'": "Rscript -e",
    "R CMD BATCH analysis.R": "analysis.R",
    "perl -Ilib -w tool.pl": "tool.pl",
    'mpiexec -n 8 "/opt/my app/bin/solver" --in a\\\n b': "solver",
    "FOO=1 BAR='x y' time ./bench": "bench",
    "if [ -f x ]; then\n  echo yes\nfi\nexec ./final": "final",
    "python3.11 -X dev -W error -m pkg.main": "pkg.main",
    "python -uc 'x'": "python -c",
    "srun \\\n  -n 4 \\\n  ./continued": "continued",  # backslash-newlines join the lines
    "srun ./early\ncat <<EOF\n" + "x" * 300_000 + "\nEOF\n": "early",  # a here-document after the command
    "#!/bin/sh\n" + "#" * 70_000 + "\nsrun ./late\n": "NAME",  # past the first 64 KiB: not read
    "#!/bin/sh\n# only comments\n": "NAME",  # no program: the job's name
    "srun": "NAME",
    "#!/bin/sh\n# flux: -N 2\nflux resource list\nflux run -N 2 -n 8 --label-io /opt/lammps/bin/lmp -in x\n": "lmp",
    "flux submit --cc=1-4 -n2 python3 train.py": "train.py",
    "flux jobs -a": "flux",  # not a launch: the program is flux itself
}


@pytest.mark.parametrize("runtime_module", [lua51, lua54], ids=["lua5.1", "lua5.4"])
def test_the_app_key_is_the_same_in_lua_in_the_hooks_and_in_darshan_rows(tmp_path, monkeypatch, runtime_module):
    keys = sorted({*APP_KEYS.values(), "python3"})
    apps = ", ".join(f"[{json.dumps(key)}] = {{set = {k}, priority = 1}}" for k, key in enumerate(keys))
    path = tmp_path / "iosets.lua"
    path.write_text(f"return {{version = 1, default = {{set = 99, priority = 1}}, users = {{}}, apps = {{{apps}}}}}")
    monkeypatch.setenv("IOSETS_LUA", str(path))
    lua, submit = lua_hook(runtime_module)
    app_key = load_module(SLURM_HOOKS / "app_key.py", "iosets_app_key_under_test")
    for script, key in APP_KEYS.items():
        assert app_key.app_key(script=script, name="NAME") == key, script
        assert submit(1, "NAME", script=script) == f"iosets set={keys.index(key)} priority=1 source=lua:app", script
    argv = lua.table_from({0: "/usr/bin/python3", 1: "train.py"})  # srun's job: argv 0-based, no script
    job_desc = lua.table_from({"user_id": 1, "name": "NAME", "argv": argv, "argc": 2})
    lua.globals().slurm_job_submit(job_desc, None, 1)
    assert job_desc["admin_comment"] == f"iosets set={keys.index('python3')} priority=1 source=lua:app"
    assert app_key.app_key(command="/usr/bin/python3") == "python3"  # the prolog's key of the same job
    words = app_key.batch_command("srun -n 4 /opt/lammps/bin/lmp -in in.lj")
    assert app_name(" ".join(words)) == app_key.app_key(script="srun -n 4 lmp -in in.lj") == "lmp"  # Darshan's rule


def test_the_lua_rule_lists_the_words_app_key_lists():
    """Launchers, their flags, setup commands, prefixes and constructs: the same sets in Lua and in Python."""
    source = (SLURM_HOOKS / "job_submit.lua").read_text()
    app_key = load_module(SLURM_HOOKS / "app_key.py", "iosets_app_key_words")
    for name in ("LAUNCHERS", "LAUNCHER_FLAGS", "FLUX_LAUNCHES", "SETUP", "PREFIXES", "CONSTRUCTS"):
        listed = re.search(rf"^local IOSETS_{name} = iosets_set\((.*?)\)$", source, re.MULTILINE | re.DOTALL)
        assert listed is not None, name
        assert set(re.findall(r'"([^"]*)"', listed[1])) == getattr(app_key, name), name
    assert re.search(r"^local IOSETS_SCRIPT_MAX = (\d+) ", source, re.MULTILINE)[1] == str(app_key.SCRIPT_MAX)


def document(set_: int) -> str:
    return (
        "return {version = 1, default = {set = 4, priority = 0.0001, conservative = true}, users = {},"
        f" apps = {{['A'] = {{set = {set_}, priority = {10.0**-set_!r}, conservative = false}}}}}}"
    )


@pytest.mark.parametrize("runtime_module", [lua51, lua54], ids=["lua5.1", "lua5.4"])
def test_job_submit_lua_follows_the_file_and_survives_bad_ones(tmp_path, monkeypatch, runtime_module):
    path = tmp_path / "iosets.lua"
    monkeypatch.setenv("IOSETS_LUA", str(path))
    lua, submit = lua_hook(runtime_module, check=0)
    assert submit(1, "A", "keep") == "keep"  # no file yet: the job goes through untagged
    path.write_text(document(1))
    assert submit(1, "A") == "iosets set=1 priority=0.1 source=lua:app"
    path.write_text(document(3))
    assert submit(1, "A") == "iosets set=3 priority=0.001 source=lua:app"
    path.write_text("return {")
    assert submit(1, "A") == "iosets set=3 priority=0.001 source=lua:app"  # the last good document
    path.write_bytes(b"\x1bLua binary")
    assert submit(1, "B") == "iosets set=4 priority=0.0001 source=lua:default conservative"
    path.write_text("os.execute('touch pwned'); return {}")
    submit(1, "A")
    messages = list(lua.globals().logged.values())
    assert len(messages) == 4 and all(m.startswith(f"iosets: cannot load {path}: ") for m in messages)
    assert "No such file" in messages[0] and "<eof>" in messages[1]  # "return {" ends early
    assert messages[2].endswith(": a compiled chunk, not a document")
    assert "'os'" in messages[3] and not (tmp_path / "pwned").exists()  # no globals: os is nil in the document


# ---- Flux ------------------------------------------------------------------------------------------------------------


class Jobspec:
    """The part of flux.job.Jobspec the plugin uses: attributes, tasks, resources, setattr('system.x', v)."""

    def __init__(self, jobspec: dict):
        self.jobspec = jobspec

    attributes = property(lambda self: self.jobspec.setdefault("attributes", {}))
    tasks = property(lambda self: self.jobspec.get("tasks"))
    resources = property(lambda self: self.jobspec.get("resources"))

    def setattr(self, key, value):
        node = self.attributes
        *path, last = key.split(".")
        for part in path:
            node = node.setdefault(part, {})
        node[last] = value


@pytest.fixture
def flux_stub(monkeypatch):
    """``flux.job.frobnicator.FrobnicatorPlugin`` as flux-core defines it (takes the argparse parser)."""
    frobnicator = types.ModuleType("flux.job.frobnicator")

    class FrobnicatorPlugin:
        def __init__(self, parser):
            self.parser = parser

    frobnicator.FrobnicatorPlugin = FrobnicatorPlugin
    for name, module in [("flux", types.ModuleType("flux")), ("flux.job", types.ModuleType("flux.job"))]:
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setitem(sys.modules, "flux.job.frobnicator", frobnicator)


def flux_jobspec(**system) -> Jobspec:
    """2 nodes x 2 slots, 2 tasks per slot: 8 tasks."""
    slot = {"type": "slot", "count": 2, "label": "task", "with": [{"type": "core", "count": 1}]}
    return Jobspec(
        {
            "version": 1,
            "resources": [{"type": "node", "count": 2, "with": [slot]}],
            "tasks": [{"command": ["/opt/bin/A", "-x"], "slot": "task", "count": {"per_slot": 2}}],
            "attributes": {"system": {"duration": 3600.0, **system}},
        }
    )


def test_flux_frobnicator_annotates_the_jobspec(flux_stub, learned, tmp_path, monkeypatch):
    monkeypatch.delenv("IOSETS_TOKEN", raising=False)
    plugin = load_module(HOOKS / "flux" / "iosets_frobnicator.py", "iosets_frobnicator").Frobnicator(parser=None)
    (tmp_path / "token").write_text(learned.token)
    plugin.configure(None, {"iosets": {"url": learned.url, "token_file": str(tmp_path / "token"), "timeout": 30}})
    jobspec = flux_jobspec()
    assert plugin.frob(jobspec, 1001, 0, 16) is None
    served = learned.get("/v1/recommendation", app="A", user="1001", nprocs=8, requested_time=3600.0).json()
    assert jobspec.attributes["system"]["iosets"] == served and (served["set"], served["nprocs"]) == (2, 8)
    named = flux_jobspec(job={"name": "renamed"})  # the name is no key: the program is
    plugin.frob(named, 1001, 0, 16)
    assert named.attributes["system"]["iosets"]["app"] == "A"


BATCH_SCRIPT = "#!/bin/bash\n# flux: -N 2\nmodule load lammps\nflux run -N 2 -n 8 --label-io lmp -in in.lj\n"
FLUX_BATCH = {  # flux batch -N 2 -t 60 batch.sh, as flux-core's Jobspec.from_batch_command records it
    "version": 1,
    "resources": [
        {
            "type": "node",
            "count": 2,
            "with": [{"type": "slot", "count": 1, "label": "task", "with": [{"type": "core", "count": 4}]}],
        }
    ],
    "tasks": [{"command": ["flux", "broker", "{{tmpdir}}/script"], "slot": "task", "count": {"per_slot": 1}}],
    "attributes": {
        "system": {
            "duration": 3600.0,
            "cwd": "/home/alice/run",
            "job": {"name": "batch.sh"},
            "files": {"script": {"data": BATCH_SCRIPT, "encoding": "utf-8", "perms": 448}},
        }
    },
}
FLUX_RUN = {  # flux submit -N 2 -n 8 python3 -u /home/alice/train.py --lr 1
    "version": 1,
    "resources": [
        {
            "type": "node",
            "count": 2,
            "with": [{"type": "slot", "count": 4, "label": "task", "with": [{"type": "core", "count": 1}]}],
        }
    ],
    "tasks": [
        {"command": ["python3", "-u", "/home/alice/train.py", "--lr", "1"], "slot": "task", "count": {"total": 8}}
    ],
    "attributes": {"system": {"duration": 0, "cwd": "/home/alice", "job": {"name": "python3"}}},
}


@pytest.mark.parametrize(
    "record, key",
    [
        (FLUX_BATCH, "lmp"),  # the program its script launches (flux run inside the script is a launcher)
        (FLUX_RUN, "train.py"),  # the program of its command line, as Darshan names it
        ({**FLUX_BATCH, "attributes": {"system": {"job": {"name": "batch.sh"}}}}, "batch.sh"),  # no script: its name
    ],
    ids=["flux-batch", "flux-submit", "no-script"],
)
def test_flux_keys_a_job_by_its_program_as_slurm_does(flux_stub, record, key):
    plugin = load_module(HOOKS / "flux" / "iosets_frobnicator.py", "iosets_frobnicator")
    jobspec = Jobspec(json.loads(json.dumps(record)))
    assert plugin.job_app(jobspec) == key
    app_key = load_module(SLURM_HOOKS / "app_key.py", "iosets_app_key_flux")
    assert app_key.app_key(script=BATCH_SCRIPT, name="x") == "lmp"  # the Slurm hooks' key of the same script
    encoded = {"data": base64.b64encode(BATCH_SCRIPT.encode()).decode(), "encoding": "base64"}
    jobspec.attributes["system"]["files"] = {"script": encoded}
    assert plugin.job_app(jobspec) == "lmp"


def test_flux_frobnicator_never_refuses_a_job(flux_stub, tmp_path, monkeypatch):
    monkeypatch.setenv("IOSETS_URL", f"http://127.0.0.1:{closed_port()}")
    plugin = load_module(HOOKS / "flux" / "iosets_frobnicator.py", "iosets_frobnicator").Frobnicator(parser=None)
    jobspec = flux_jobspec()
    plugin.frob(jobspec, 1001, 0, 16)
    answer = jobspec.attributes["system"]["iosets"]
    assert (answer["app"], answer["nprocs"], answer["source"], answer["set"]) == ("A", 8, "unavailable", 99)
    odd = flux_jobspec()
    odd.jobspec["tasks"][0]["count"] = {"total": "many"}
    plugin.frob(odd, 1001, 0, 16)
    answer = odd.attributes["system"]["iosets"]
    assert (answer["source"], answer["error"]) == (
        "unavailable",
        "ValueError: invalid literal for int() with base 10: 'many'",
    )


def test_flux_frobnicator_uses_a_client_copied_beside_it(flux_stub, tmp_path, monkeypatch, request):
    request.addfinalizer(lambda: sys.modules.pop("iosets_client", None))
    shutil.copy(HOOKS / "flux" / "iosets_frobnicator.py", tmp_path / "iosets_frobnicator.py")
    shutil.copy(CLIENT, tmp_path / "client.py")
    monkeypatch.setitem(sys.modules, "iosets.api.client", None)
    monkeypatch.delattr(iosets.api, "client")
    monkeypatch.setenv("IOSETS_URL", f"http://127.0.0.1:{closed_port()}")
    plugin = load_module(tmp_path / "iosets_frobnicator.py", "copied_frobnicator").Frobnicator(parser=None)
    assert plugin.client.__file__ == str(tmp_path / "client.py")


# ---- PBS -------------------------------------------------------------------------------------------------------------


class Resources(dict):
    """PBS's Resource_List: an unset resource reads as None."""

    def __getitem__(self, key):
        return self.get(key)


class PbsJob:
    """A PBS job of a script (``qsub job.sh``): unset attributes (``executable``, ``argument_list``) read as None."""

    def __init__(self, **resources):
        self.id, self.Job_Name, self.euser, self.Job_Owner = "1234.pbs", "A", "root", "root@login"
        self.Submit_arguments = "<jsdl-hpcpa:Argument>job.sh</jsdl-hpcpa:Argument>"
        self.executable = self.argument_list = None
        self.Resource_List = Resources(resources)
        self.comment = None


@pytest.fixture
def pbs_stub(monkeypatch, tmp_path):
    """A stub ``pbs`` module: one runjob event, logmsg recorded, the hook's config file in tmp_path."""
    pbs = types.ModuleType("pbs")
    pbs.LOG_WARNING = 4
    pbs.logged = []
    pbs.logmsg = lambda level, message: pbs.logged.append((level, message))
    pbs.job = PbsJob(ncpus=16, walltime=7200)
    pbs.accepted = []
    pbs.event = lambda: types.SimpleNamespace(job=pbs.job, accept=lambda: pbs.accepted.append(True))
    pbs.hook_config_filename = None
    monkeypatch.setitem(sys.modules, "pbs", pbs)
    return pbs


def test_pbs_runjob_hook_writes_the_answer_on_the_job(pbs_stub, learned, tmp_path):
    (tmp_path / "token").write_text(learned.token)
    config = {"url": learned.url, "token_file": str(tmp_path / "token"), "timeout": 30, "resource": "iosets_set"}
    (tmp_path / "iosets_runjob.json").write_text(json.dumps(config))
    pbs_stub.hook_config_filename = str(tmp_path / "iosets_runjob.json")
    runpy.run_path(str(HOOKS / "pbs" / "iosets_runjob.py"))
    served = learned.get("/v1/recommendation", app="A", user="0", nprocs=16, requested_time=7200.0, job_id="1234.pbs")
    assert pbs_stub.job.comment == client.tag(served.json()) == "iosets set=2 priority=0.01 source=history"
    assert pbs_stub.job.Resource_List["iosets_set"] == 2 and pbs_stub.accepted == [True] and pbs_stub.logged == []


def test_pbs_runjob_hook_accepts_when_the_service_is_down(pbs_stub, tmp_path, monkeypatch):
    monkeypatch.setenv("IOSETS_URL", f"http://127.0.0.1:{closed_port()}")
    runpy.run_path(str(HOOKS / "pbs" / "iosets_runjob.py"))
    assert pbs_stub.job.comment == "iosets set=99 priority=1e-99 source=unavailable conservative"
    assert pbs_stub.accepted == [True] and pbs_stub.job.Resource_List["iosets_set"] is None
    ((level, message),) = pbs_stub.logged
    assert level == pbs_stub.LOG_WARNING and message.startswith("iosets: job 1234.pbs: default answer: http://")


def test_pbs_runjob_hook_accepts_a_job_it_cannot_read(pbs_stub, tmp_path):
    (tmp_path / "bad.json").write_text("{not json")
    pbs_stub.hook_config_filename = str(tmp_path / "bad.json")
    runpy.run_path(str(HOOKS / "pbs" / "iosets_runjob.py"))
    assert pbs_stub.job.comment is None and pbs_stub.accepted == [True]
    assert pbs_stub.logged[0][1].startswith("iosets: job 1234.pbs: not annotated: JSONDecodeError: ")


def test_pbs_runjob_hook_imports_a_copied_client(pbs_stub, tmp_path, monkeypatch, request):
    request.addfinalizer(lambda: sys.modules.pop("iosets_client", None))
    shutil.copy(CLIENT, tmp_path / "iosets_client.py")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(sys.modules, "iosets.api.client", None)
    monkeypatch.delattr(iosets.api, "client")
    monkeypatch.setenv("IOSETS_URL", f"http://127.0.0.1:{closed_port()}")
    namespace = runpy.run_path(str(HOOKS / "pbs" / "iosets_runjob.py"))
    assert namespace["client"].__file__ == str(tmp_path / "iosets_client.py")
    assert pbs_stub.job.comment.startswith("iosets set=99 ")


def jsdl(tag: str, *values: str) -> str:
    return "".join(f"<jsdl-hpcpa:{tag}>{value}</jsdl-hpcpa:{tag}>" for value in values)


@pytest.mark.parametrize(
    "executable, arguments, key",
    [
        ("/opt/openmpi/bin/mpirun", ("-np", "128", "./wrf.exe"), "wrf.exe"),  # qsub -- mpirun -np 128 ./wrf.exe
        ("/bin/sleep", ("500",), "sleep"),  # qsub -- /bin/sleep 500 (qstat -f: executable, argument_list)
        ("/usr/bin/python3", ("-u", "/home/a&amp;b/train.py"), "train.py"),  # XML-escaped in the record
        (None, (), "A"),  # qsub job.sh: a runjob hook has no script to read, the job's name is the key
    ],
)
def test_pbs_keys_a_job_by_its_program_as_slurm_does(pbs_stub, tmp_path, executable, arguments, key):
    if executable is not None:
        pbs_stub.job.executable, pbs_stub.job.argument_list = (
            jsdl("Executable", executable),
            jsdl("Argument", *arguments),
        )
    stub = StubService()
    (tmp_path / "iosets_runjob.json").write_text(json.dumps({"url": stub.url, "timeout": 30}))
    pbs_stub.hook_config_filename = str(tmp_path / "iosets_runjob.json")
    try:
        runpy.run_path(str(HOOKS / "pbs" / "iosets_runjob.py"))
    finally:
        stub.close()
    (request,) = stub.requests
    assert request["path"].startswith(f"/v1/recommendation?app={key}&user=0&nprocs=16&")
    assert pbs_stub.accepted == [True] and pbs_stub.logged == []
