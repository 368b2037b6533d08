"""OpenPBS ``runjob`` hook: stamp each starting job with its iosets recommendation, then accept it.

Install (as root on the server host)::

    qmgr -c "create hook iosets_runjob event=runjob"
    qmgr -c "import hook iosets_runjob application/x-python default iosets_runjob.py"
    qmgr -c "import hook iosets_runjob application/x-config default iosets_runjob.json"

The optional config is a JSON object: ``url``, ``token_file``, ``timeout`` (they override the
client's ``IOSETS_URL``, ``IOSETS_TOKEN_FILE``, ``IOSETS_TIMEOUT``) and ``resource``: the name of a
custom job resource (``qmgr -c "create resource iosets_set type=long"``) that receives the set.
The job's ``comment`` gets ``iosets set=S priority=P source=X``. The hook imports
``iosets.api.client``, or ``iosets_client`` (a copy of ``iosets/api/client.py``) where iosets is not
installed for PBS's Python. The job always runs: any trouble is a line in the server log.
"""

import json
import os
import pwd

import pbs

try:
    from iosets.api import client
except ImportError:
    import iosets_client as client  # type: ignore[no-redef]

_KEYS = ("url", "token_file", "timeout")


def hook_config() -> dict:
    """The hook's JSON config (``pbs.hook_config_filename``); empty when none was imported."""
    if not pbs.hook_config_filename:
        return {}
    with open(pbs.hook_config_filename, encoding="utf-8") as file:
        return json.load(file)


def job_user(job) -> str:
    """The job owner's numeric uid (as Darshan records users), or the name when this host does not know it."""
    name = str(job.euser or job.Job_Owner or "").split("@")[0]
    try:
        return str(pwd.getpwnam(name).pw_uid)
    except KeyError:
        return name


def job_request(job) -> dict:
    """What the service is asked: the job's name as the app, its uid, cpus, walltime in seconds, id."""
    resources = job.Resource_List
    nprocs = resources["mpiprocs"] or resources["ncpus"]
    walltime = resources["walltime"]
    return {
        "app": str(job.Job_Name or ""),
        "user": job_user(job),
        "nprocs": int(nprocs) if nprocs else None,
        "requested_time": float(int(walltime)) if walltime is not None else None,
        "job_id": str(job.id),
    }


def annotate(event) -> None:
    """Ask the service about ``event.job`` and write the answer on the job; accept the event whatever happens."""
    job = event.job
    try:
        config = hook_config()
        env = dict(os.environ) | {f"IOSETS_{key.upper()}": str(config[key]) for key in _KEYS if key in config}
        if "token_file" in config:
            env.pop("IOSETS_TOKEN", None)
        answer = client.recommend(**job_request(job), connection=client.Connection.from_environment(env))
        job.comment = client.tag(answer)
        if config.get("resource"):
            job.Resource_List[config["resource"]] = int(answer["set"])
        if "error" in answer:
            pbs.logmsg(pbs.LOG_WARNING, f"iosets: job {job.id}: default answer: {answer['error']}")
    except Exception as error:  # noqa: BLE001 - a hook must never keep a job from running
        pbs.logmsg(pbs.LOG_WARNING, f"iosets: job {job.id}: not annotated: {type(error).__name__}: {error}")
    event.accept()


annotate(pbs.event())
