"""A real single-node Slurm with the shipped hooks: job_submit.lua, PrologSlurmctld and EpilogSlurmctld.

Debian's ``slurmctld``, ``slurmd`` and ``munge`` run as root in a temporary folder (a private
munged on its own socket, ``AuthInfo=socket=...``), ``sbatch --wrap`` jobs pass through the hooks,
and the test checks the AdminComment they stamp and the rows the epilog posts to a live
``iosets serve``: from an empty store and from a learned one, and while the service hangs
(SIGSTOP) or is stopped (the rows then wait in the epilog's spool and reach the store once the
service is back, each job once). A job whose Darshan log the epilog finds is posted with the log
and the node count of its record. A job's app is the program its script runs (a script named like
the app in ``bin/``), never its name. Skipped with the reason when Slurm or munge is missing (or not root); failed
instead when ``IOSETS_REQUIRE_SLURM=1``.
"""

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from iosets.api.client import tag

from .hookkit import CLIENT, HOOKS, SLURM_HOOKS, learned_jobs, wait_for

APP_NAME = HOOKS.parents[1] / "analyzer" / "_ingest" / "_app_name.py"
DARSHAN_LOG = Path(__file__).parents[1] / "data" / "darshan" / "jlbez_IO_test5.darshan"

pytestmark = pytest.mark.slow

TOOLS = ("munged", "slurmctld", "slurmd", "sbatch", "scontrol", "sinfo")
SEARCH_PATH = os.environ.get("PATH", "") + ":/usr/sbin:/sbin:/usr/bin:/bin"
SLURM_CONF = """ClusterName=iosets
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={d}/munge/munge.sock
CredType=cred/munge
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobSubmitPlugins=lua
PrologSlurmctld={d}/hooks/prolog_slurmctld
EpilogSlurmctld={d}/hooks/epilog_slurmctld
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
MpiDefault=none
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
NodeName=localhost NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
"""


def require_slurm() -> None:
    """Skip (or fail, with IOSETS_REQUIRE_SLURM=1) when this host cannot run a Slurm of its own."""
    missing = [tool for tool in TOOLS if shutil.which(tool, path=SEARCH_PATH) is None]
    reason = ""
    if missing:
        reason = f"Slurm test needs {', '.join(missing)}: apt-get install -y slurmctld slurmd slurm-client munge"
    elif os.geteuid() != 0:
        reason = "Slurm test needs root (slurmd, munged)"
    if reason:
        if os.environ.get("IOSETS_REQUIRE_SLURM") == "1":
            pytest.fail(f"IOSETS_REQUIRE_SLURM=1 but {reason}")
        pytest.skip(reason)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Slurm:
    """munged, slurmctld and slurmd in ``folder``, started by :meth:`start`, stopped by :meth:`stop`."""

    def __init__(self, folder: Path, service_env: dict[str, str], lua_file: Path):
        self.d = folder
        self.env = {**os.environ, "PATH": SEARCH_PATH, "SLURM_CONF": str(folder / "slurm.conf")}
        self.daemon_env = {**self.env, "IOSETS_LUA": str(lua_file)}  # read by job_submit.lua inside slurmctld
        self.processes: list[subprocess.Popen] = []
        (folder / "munge").mkdir(mode=0o700)
        for sub in ("state", "spool", "hooks", "out", "bin"):
            (folder / sub).mkdir()
        for app in ("A", "B", "never_seen"):  # the programs the jobs run: their app keys
            (folder / "bin" / app).write_text("#!/bin/sh\nsleep 1\n")
            (folder / "bin" / app).chmod(0o755)
        key = folder / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        conf = SLURM_CONF.format(d=folder, ctld_port=free_port(), d_port=free_port())
        (folder / "slurm.conf").write_text(conf)
        shutil.copy(SLURM_HOOKS / "job_submit.lua", folder / "job_submit.lua")  # beside slurm.conf
        for name in ("prolog_slurmctld", "epilog_slurmctld", "drain_spool", "iosets_slurmctld.py", "job_log.py"):
            shutil.copy2(SLURM_HOOKS / name, folder / "hooks" / name)
        for name in ("spool.py", "app_key.py"):
            shutil.copy2(SLURM_HOOKS / name, folder / "hooks" / name)
        shutil.copy(CLIENT, folder / "hooks" / "client.py")
        shutil.copy(APP_NAME, folder / "hooks" / "app_name.py")
        self.spool = folder / "iosets-spool"  # the epilog makes it (SlurmUser=root)
        self.settings = {**service_env, "SLURM_CONF": str(folder / "slurm.conf"), "PATH": "/usr/bin:/bin"}
        self.settings["IOSETS_SPOOL"] = str(self.spool)
        self.configure()

    def configure(self, **settings: str) -> None:
        """(Re)write the hooks' iosets.conf with ``settings`` over the first ones; each hook run reads it."""
        self.settings |= settings
        (self.d / "hooks" / "iosets.conf").write_text("".join(f"{k}={v}\n" for k, v in self.settings.items()))

    def spawn(self, name: str, *args: str) -> None:
        with (self.d / f"{name}.out").open("wb") as out:
            command = [shutil.which(name, path=SEARCH_PATH), *args]
            self.processes.append(
                subprocess.Popen(command, stdout=out, stderr=out, env=self.daemon_env, start_new_session=True)
            )

    def start(self) -> None:
        sock = self.d / "munge" / "munge.sock"
        munge = self.d / "munge"
        self.spawn(
            "munged",
            "-F",
            "--force",
            f"--socket={sock}",
            f"--key-file={munge / 'munge.key'}",
            f"--pid-file={munge / 'munged.pid'}",
            f"--log-file={munge / 'munged.log'}",
            f"--seed-file={munge / 'munged.seed'}",
        )
        wait_for("munged socket", sock.exists, [self.d / "munged.out"])
        conf = str(self.d / "slurm.conf")
        self.spawn("slurmctld", "-D", "-i", "-f", conf)
        self.spawn("slurmd", "-D", "-N", "localhost", "-f", conf)
        logs = [self.d / "slurmctld.log", self.d / "slurmd.log", self.d / "slurmctld.out", self.d / "slurmd.out"]
        wait_for("node idle", lambda: self.run("sinfo", "-h", "-o", "%t", check=False).strip() == "idle", logs)

    def run(self, *command: str, check: bool = True) -> str:
        done = subprocess.run(command, env=self.env, capture_output=True, text=True, timeout=30)
        if check and done.returncode != 0:
            raise AssertionError(f"{' '.join(command)}: {done.stderr}")
        return done.stdout

    def sbatch(self, *args: str) -> str:
        return self.run("sbatch", "--parsable", f"--output={self.d}/out/%j.out", *args).strip().split(";")[0]

    def program(self, app: str) -> str:
        """The path of the program whose app key is ``app`` (for ``--wrap``)."""
        return str(self.d / "bin" / app)

    def job(self, job_id: str) -> dict[str, str]:
        """``scontrol show job``: fields, the AdminComment line whole."""
        fields = {}
        for line in self.run("scontrol", "show", "job", job_id).splitlines():
            line = line.strip()
            if line.startswith("AdminComment="):
                fields["AdminComment"] = line.partition("=")[2].strip()
                continue
            fields |= dict(token.partition("=")[::2] for token in line.split() if "=" in token)
        return fields

    def stop(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


@pytest.fixture
def start_slurm(serve, tmp_path):
    """``start_slurm(learned)``: a live service (that learned apps A and B, set 2, when ``learned``), its --lua-out
    file, and a Slurm whose hooks use both; ``(slurm, server)``."""
    require_slurm()
    started = []

    def start(learned: bool):
        lua_out = tmp_path / "iosets.lua"
        server = serve(lua_out=lua_out)
        for row in [*learned_jobs("A", "1001"), *learned_jobs("B", "1001")] if learned else []:
            assert server.post_job(row).status_code == 201
        learned_apps = ('["A"]', '["B"]') if learned else ()
        wait_for("the --lua-out file", lambda: lua_out.exists() and all(a in lua_out.read_text() for a in learned_apps))
        token = tmp_path / "token"
        token.write_text(server.token)
        token.chmod(0o600)
        folder = Path(tempfile.mkdtemp(prefix="iosets-slurm-", dir="/tmp"))  # short: unix socket paths are limited
        service_env = {"IOSETS_URL": server.url, "IOSETS_TOKEN_FILE": str(token), "IOSETS_TIMEOUT": "30"}  # refits
        service_env |= {"IOSETS_PROLOG_TIMEOUT": "40", "IOSETS_EPILOG_TIMEOUT": "40"}  # a loaded machine's refits
        slurm = Slurm(folder, service_env, lua_out)
        started.append(slurm)
        slurm.start()
        return slurm, server

    yield start
    for slurm in started:
        slurm.stop()
        shutil.rmtree(slurm.d, ignore_errors=True)


def test_slurm_jobs_carry_the_services_answer_and_are_posted(start_slurm):
    slurm, server = start_slurm(learned=True)

    def served(app: str, **asked) -> str:
        return tag(server.get("/v1/recommendation", app=app, user="0", **asked).json())

    held = slurm.sbatch("--hold", "-J", "not_the_key", "-t", "10", "--wrap", slurm.program("A"))
    unknown = slurm.sbatch("-J", "A", "-t", "5", "--wrap", slurm.program("never_seen"))  # the name is no key
    # at submission, job_submit.lua answers from the --lua-out file: root (uid 0) has no entry, the app has
    assert served("A") == "iosets set=2 priority=0.01 source=history"
    assert slurm.job(held)["AdminComment"] == "iosets set=2 priority=0.01 source=lua:app"
    slurm.run("scontrol", "release", held)
    for job_id in (held, unknown):
        wait_for(f"job {job_id} completed", lambda j=job_id: slurm.job(j)["JobState"] == "COMPLETED")
        wait_for(f"job {job_id} posted", lambda j=job_id: server.get(f"/v1/jobs/{j}").status_code == 200)
    # when the job started, the prolog replaced that tag with the service's answer (TimeLimit 10 min = 600 s)
    assert slurm.job(held)["AdminComment"] == served("A", nprocs=1, requested_time=600.0, job_id=held)
    default = served("never_seen", nprocs=1, requested_time=300.0, job_id=unknown)
    assert " source=default conservative" in default and slurm.job(unknown)["AdminComment"] == default
    for job_id, app in ((held, "A"), (unknown, "never_seen")):
        shown, row = slurm.job(job_id), server.get(f"/v1/jobs/{job_id}").json()
        start = time.mktime(time.strptime(shown["StartTime"], "%Y-%m-%dT%H:%M:%S"))
        end = time.mktime(time.strptime(shown["EndTime"], "%Y-%m-%dT%H:%M:%S"))
        assert (row["app"], row["user"], row["nprocs"], row["nodes"], row["start"]) == (app, "0", 1, 1, start)
        assert row["end"] == end
        assert row["runtime"] == end - start
    assert len(server.get("/v1/jobs", app="A").json()["jobs"]) == 21  # the 20 learned ones and the Slurm job


def test_slurm_tags_from_an_empty_store_and_stores_jobs_with_or_without_darshan_logs(start_slurm):
    slurm, server = start_slurm(learned=False)
    logs = slurm.d / "darshan"  # root's, as are the jobs (sbatch as root): the epilog reads them as their user
    logs.mkdir()
    slurm.configure(IOSETS_DARSHAN_PATTERN=str(logs / "%j.darshan"))
    job = slurm.sbatch("--hold", "-J", "wrap_job", "-t", "10", "--wrap", slurm.program("A"))
    assert slurm.job(job)["AdminComment"] == "iosets set=99 priority=1e-99 source=lua:default conservative"
    assert "cannot load" not in (slurm.d / "slurmctld.log").read_text()
    slurm.run("scontrol", "release", job)
    wait_for(f"job {job} completed", lambda: slurm.job(job)["JobState"] == "COMPLETED")
    wait_for(f"job {job} posted", lambda: server.get(f"/v1/jobs/{job}").status_code == 200)
    row = server.get(f"/v1/jobs/{job}").json()  # no Darshan log: what Slurm knows, under the app key
    assert (row["app"], row["user"], row["nprocs"], row["nodes"], row["w_iter"], row["path"]) == (
        "A",
        "0",
        1,
        1,  # NumNodes: what Slurm knows without a log
        None,
        None,
    )
    assert row["runtime"] is not None and row["runtime"] >= 0
    logged = slurm.sbatch("--hold", "-t", "10", "--wrap", slurm.program("A"))
    shutil.copy(DARSHAN_LOG, logs / f"{logged}.darshan")  # the log its job wrote
    slurm.run("scontrol", "release", logged)
    wait_for(f"job {logged} completed", lambda: slurm.job(logged)["JobState"] == "COMPLETED")
    wait_for(f"job {logged} posted", lambda: server.get(f"/v1/jobs/{logged}").status_code == 200)
    row = server.get(f"/v1/jobs/{logged}").json()  # the log's row, and the node count only Slurm knows
    assert (row["path"], row["nodes"], row["n_logs"]) == (f"{logged}.darshan", 1, 1) and row["source"] is not None


def test_slurm_keeps_the_tag_ends_jobs_and_spools_rows_while_the_service_hangs_or_is_stopped(start_slurm):
    slurm, server = start_slurm(learned=True)
    slurm.configure(IOSETS_PROLOG_TIMEOUT="3", IOSETS_EPILOG_TIMEOUT="3")  # IOSETS_TIMEOUT stays 30
    submitted = "iosets set=2 priority=0.01 source=lua:app"
    log = slurm.d / "slurmctld.log"
    # one app per outage: the post a hung service receives is stored once it resumes, and the refit it causes may
    # give app A's Lua entry a row for this user (source=lua:user) before the second job is submitted
    away = {}
    for outage, app in (("hangs", "A"), ("stopped", "B")):
        job = slurm.sbatch("--hold", "-t", "10", "--wrap", slurm.program(app))
        assert slurm.job(job)["AdminComment"] == submitted
        if outage == "hangs":
            server.process.send_signal(signal.SIGSTOP)
        else:
            server.process.send_signal(signal.SIGCONT)
            server.stop()
        try:
            slurm.run("scontrol", "release", job)
            # the prolog and the epilog give up within their 3 s: the job leaves COMPLETING
            wait_for(f"job {job} completed ({outage})", lambda j=job: slurm.job(j)["JobState"] == "COMPLETED", [log])
            ended = f"JobId={job} EpilogSlurmctld exit status"
            wait_for(f"job {job}'s epilog logged", lambda e=ended: e in log.read_text())
        finally:
            server.process.send_signal(signal.SIGCONT)
        assert slurm.job(job)["AdminComment"] == submitted  # never replaced by the default answer
        assert f"JobId={job} EpilogSlurmctld exit status 3:0" in log.read_text()  # 3: the service did not answer
        away[job] = app
    spooled = sorted(path.name.rsplit("-", 1)[1] for path in slurm.spool.glob("*.json"))
    assert spooled == sorted(f"{job}.json" for job in away)  # both rows wait in the spool, nothing lost
    server.restart()  # the service is back: the next epilog posts the spooled rows after its own job
    slurm.configure(IOSETS_EPILOG_TIMEOUT="40", IOSETS_SPOOL_DRAIN_TIME="30")  # a loaded machine's refits
    after = slurm.sbatch("-t", "10", "--wrap", slurm.program("A"))
    for job in (*away, after):
        wait_for(f"job {job} stored", lambda j=job: server.get(f"/v1/jobs/{j}").status_code == 200, [log])
    wait_for("the spool drained", lambda: not list(slurm.spool.glob("*.json")), [log])
    for job, app in away.items():
        row = server.get(f"/v1/jobs/{job}").json()
        assert (row["app"], row["user"], row["nprocs"], row["nodes"]) == (app, "0", 1, 1)
    stored = {app: server.get("/v1/jobs", app=app).json()["jobs"] for app in ("A", "B")}
    slurm_jobs = sorted(j["job_id"] for app in stored for j in stored[app] if not j["job_id"].startswith(f"{app}-"))
    assert slurm_jobs == sorted([*away, after])
    assert (len(stored["A"]), len(stored["B"])) == (22, 21)  # 20 learned each, each Slurm job once
