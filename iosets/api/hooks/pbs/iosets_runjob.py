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

The job's app is keyed as the Slurm hooks key it (``iosets/api/hooks/slurm/app_key.py``, or
``iosets_app_key``: a copy of it, with ``app_name.py`` beside it): the program of a ``qsub --
PROGRAM ARGS`` job (its ``executable`` and ``argument_list`` attributes, as Darshan reads the
command line: ``qsub -- mpirun -np 8 ./ior`` is ``ior``). A runjob hook is not given a script
job's script: such a job is keyed by its name (``#PBS -N``), which matches the Darshan rows only
when the site's users name their jobs after their programs.
"""

import importlib.util
import json
import os
import pwd
import re
from importlib.resources import files
from xml.sax.saxutils import unescape

import pbs

try:
    from iosets.api import client
except ImportError:
    import iosets_client as client  # type: ignore[no-redef]


def _load_app_key():
    """The package's ``hooks/slurm/app_key.py``, else ``iosets_app_key`` (a copy on PBS Python's path)."""
    try:
        path = files("iosets.api") / "hooks" / "slurm" / "app_key.py"
    except ImportError:
        import iosets_app_key

        return iosets_app_key
    spec = importlib.util.spec_from_file_location("iosets_app_key", str(path))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


app_key = _load_app_key()

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


def jsdl(text, tag: str) -> list[str]:
    """The values of ``<jsdl-hpcpa:TAG>`` elements in a PBS attribute (``executable``, ``argument_list``)."""
    found = re.findall(rf"<jsdl-hpcpa:{tag}>(.*?)</jsdl-hpcpa:{tag}>", str(text or ""), re.DOTALL)
    return [unescape(value, {"&quot;": '"', "&apos;": "'"}) for value in found]


def job_app(job) -> str:
    """The job's app key: the program of ``qsub -- PROGRAM ARGS``, else the job's name (see the module)."""
    executable = jsdl(job.executable, "Executable")
    argv = [*executable, *jsdl(job.argument_list, "Argument")] if executable else []
    return app_key.app_key(argv=argv, name=str(job.Job_Name or ""))


def job_request(job) -> dict:
    """What the service is asked: the job's app key, its uid, cpus, walltime in seconds, id."""
    resources = job.Resource_List
    nprocs = resources["mpiprocs"] or resources["ncpus"]
    walltime = resources["walltime"]
    return {
        "app": job_app(job),
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
