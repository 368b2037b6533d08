"""A real single-node Slurm with the shipped hooks: job_submit.lua, PrologSlurmctld and EpilogSlurmctld.

Debian's ``slurmctld``, ``slurmd`` and ``munge`` run as root in a temporary folder (a private
munged on its own socket, ``AuthInfo=socket=...``), ``sbatch --wrap`` jobs pass through the hooks,
and the test checks the AdminComment they stamp and the rows the epilog posts to a live
``iosets serve``. Skipped with the reason when Slurm or munge is missing (or not root); failed
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

from .hookkit import CLIENT, SLURM_HOOKS, learned_jobs

pytestmark = pytest.mark.slow

TOOLS = ("munged", "slurmctld", "slurmd", "sbatch", "scontrol", "sinfo")
SEARCH_PATH = os.environ.get("PATH", "") + ":/usr/sbin:/sbin:/usr/bin:/bin"
WAIT = 60.0

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


def wait_for(what: str, predicate, logs=()) -> None:
    deadline = time.monotonic() + WAIT
    while not predicate():
        if time.monotonic() > deadline:
            tails = "\n".join(f"--- {p}\n{p.read_text()[-3000:]}" for p in logs if p.exists())
            pytest.fail(f"{what}: not within {WAIT:g} s\n{tails}")
        time.sleep(0.1)


class Slurm:
    """munged, slurmctld and slurmd in ``folder``, started by :meth:`start`, stopped by :meth:`stop`."""

    def __init__(self, folder: Path, service_env: dict[str, str], lua_file: Path):
        self.d = folder
        self.env = {**os.environ, "PATH": SEARCH_PATH, "SLURM_CONF": str(folder / "slurm.conf")}
        self.daemon_env = {**self.env, "IOSETS_LUA": str(lua_file)}  # read by job_submit.lua inside slurmctld
        self.processes: list[subprocess.Popen] = []
        (folder / "munge").mkdir(mode=0o700)
        for sub in ("state", "spool", "hooks", "out"):
            (folder / sub).mkdir()
        key = folder / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        conf = SLURM_CONF.format(d=folder, ctld_port=free_port(), d_port=free_port())
        (folder / "slurm.conf").write_text(conf)
        shutil.copy(SLURM_HOOKS / "job_submit.lua", folder / "job_submit.lua")  # beside slurm.conf
        for name in ("prolog_slurmctld", "epilog_slurmctld", "iosets_slurmctld.py"):
            shutil.copy2(SLURM_HOOKS / name, folder / "hooks" / name)
        shutil.copy(CLIENT, folder / "hooks" / "client.py")
        settings = {**service_env, "SLURM_CONF": str(folder / "slurm.conf"), "PATH": "/usr/bin:/bin"}
        (folder / "hooks" / "iosets.conf").write_text("".join(f"{k}={v}\n" for k, v in settings.items()))

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
def slurm_with_service(serve, tmp_path):
    """A live service that learned app A (set 2), its --lua-out file, and a Slurm whose hooks use both."""
    require_slurm()
    lua_out = tmp_path / "iosets.lua"
    server = serve(lua_out=lua_out)
    for row in learned_jobs("A", "1001"):
        assert server.post_job(row).status_code == 201
    wait_for("the --lua-out file", lambda: lua_out.exists() and '["A"]' in lua_out.read_text())
    token = tmp_path / "token"
    token.write_text(server.token)
    token.chmod(0o600)
    folder = Path(tempfile.mkdtemp(prefix="iosets-slurm-", dir="/tmp"))  # short: unix socket paths are limited
    service_env = {"IOSETS_URL": server.url, "IOSETS_TOKEN_FILE": str(token), "IOSETS_TIMEOUT": "30"}  # refits
    slurm = Slurm(folder, service_env, lua_out)
    try:
        slurm.start()
        yield slurm, server
    finally:
        slurm.stop()
        shutil.rmtree(folder, ignore_errors=True)


def test_slurm_jobs_carry_the_services_answer_and_are_posted(slurm_with_service):
    slurm, server = slurm_with_service

    def served(app: str, **asked) -> str:
        return tag(server.get("/v1/recommendation", app=app, user="0", **asked).json())

    held = slurm.sbatch("--hold", "-J", "A", "-t", "10", "--wrap", "sleep 1")
    unknown = slurm.sbatch("-J", "never_seen", "-t", "5", "--wrap", "sleep 1")
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
        assert (row["app"], row["user"], row["nprocs"], row["start"], row["end"]) == (app, "0", 1, start, end)
        assert row["runtime"] == end - start
    assert len(server.get("/v1/jobs", app="A").json()["jobs"]) == 21  # the 20 learned ones and the Slurm job
