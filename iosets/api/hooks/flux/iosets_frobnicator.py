"""Flux job-ingest frobnicator plugin: annotate each submitted jobspec with its iosets recommendation.

The recommendation (the service's answer, or the client's default one when the service
is down) goes to ``attributes.system.iosets``; the job is never refused. Enable it in the
broker config (``[ingest.frobnicator] plugins = ["defaults", "constraints", "/path/to/iosets_frobnicator.py"]``)
and configure it in an ``[iosets]`` table: ``url``, ``token_file``, ``timeout`` (they override the
client's ``IOSETS_URL``, ``IOSETS_TOKEN_FILE``, ``IOSETS_TIMEOUT`` variables). The client is ``iosets.api.client``,
or ``client.py`` copied beside this file where iosets is not installed for Flux's Python; the app key's rule is the
Slurm hooks' ``app_key.py`` of the package, or ``app_key.py`` and ``app_name.py`` copied beside this file.

The job's app is keyed as the Slurm hooks key it (``app_key.py``): the program its batch script
launches (``flux batch``: the script is in the jobspec, ``attributes.system.files.script``; ``flux
run``/``submit`` inside it are launchers), else the program its command runs (``flux run``/``submit``:
``tasks[0].command``, the whole command line, as Darshan reads it), else its name.
"""

from __future__ import annotations

import base64
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

from flux.job.frobnicator import FrobnicatorPlugin

_KEYS = ("url", "token_file", "timeout")


def _client() -> ModuleType:
    """``iosets.api.client``, else the ``client.py`` beside this file."""
    try:
        from iosets.api import client
    except ImportError:
        spec = importlib.util.spec_from_file_location("iosets_client", Path(__file__).resolve().parent / "client.py")
        if spec is None or spec.loader is None:
            raise
        client = importlib.util.module_from_spec(spec)
        sys.modules["iosets_client"] = client
        spec.loader.exec_module(client)
    return client


def _app_key() -> ModuleType:
    """``app_key.py`` beside this file, else the Slurm hooks' one in the package (``iosets/api/hooks/slurm``)."""
    here = Path(__file__).resolve().parent
    for path in (here / "app_key.py", here.parent / "slurm" / "app_key.py"):
        if path.is_file():
            spec = importlib.util.spec_from_file_location("iosets_app_key", path)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules["iosets_app_key"] = module
            spec.loader.exec_module(module)
            return module
    raise FileNotFoundError(f"no app_key.py beside {here} nor in {here.parent / 'slurm'}")


def batch_script(jobspec) -> str | None:
    """The script of a ``flux batch`` job (``attributes.system.files.script``, utf-8 or base64); None without one."""
    script = jobspec.attributes.get("system", {}).get("files", {}).get("script")
    if not isinstance(script, dict) or not isinstance(script.get("data"), str):
        return None
    if script.get("encoding") == "base64":
        return base64.b64decode(script["data"]).decode("utf-8", "replace")
    return script["data"]


def job_app(jobspec) -> str:
    """The job's app key: its batch script's program, else its command's program, else its name (see the module)."""
    name = str(jobspec.attributes.get("system", {}).get("job", {}).get("name") or "")
    command = [str(word) for word in jobspec.tasks[0].get("command", [])] if jobspec.tasks else []
    script = batch_script(jobspec)
    nested = command[:1] == ["flux"]  # flux batch, flux alloc: a Flux instance runs the script or a shell
    return _app_key().app_key(script=script, argv=() if nested or script is not None else command, name=name)


def job_nprocs(jobspec) -> int | None:
    """Tasks the job runs: the task count ``total``, else slots x ``per_slot`` (counts multiplied down to the slot)."""
    count = jobspec.tasks[0].get("count", {}) if jobspec.tasks else {}
    if "total" in count:
        return int(count["total"])

    def slots(resources: list, factor: int) -> int:
        total = 0
        for resource in resources:
            n = factor * int(resource.get("count", 1))
            total += n if resource.get("type") == "slot" else slots(resource.get("with", []), n)
        return total

    found = slots(jobspec.resources or [], 1)
    return found * int(count.get("per_slot", 1)) if found else None


class Frobnicator(FrobnicatorPlugin):
    """Set ``attributes.system.iosets`` to the job's recommendation."""

    def __init__(self, parser) -> None:
        super().__init__(parser)
        self.client = _client()
        self.connection = self.client.Connection.from_environment()

    def configure(self, args, config: dict) -> None:
        """Read the broker config's ``[iosets]`` table: its keys win over the environment's."""
        table = config.get("iosets", {})
        env = dict(os.environ) | {f"IOSETS_{key.upper()}": str(table[key]) for key in _KEYS if key in table}
        if "token_file" in table:
            env.pop("IOSETS_TOKEN", None)
        self.connection = self.client.Connection.from_environment(env)

    def frob(self, jobspec, user, *_flags_and_urgency) -> None:
        """Annotate ``jobspec`` (a flux ``Jobspec``) for ``user`` (the submitting uid); never refuse the job."""
        try:
            duration = jobspec.attributes.get("system", {}).get("duration") or None
            answer = self.client.recommend(
                job_app(jobspec),
                str(user),
                nprocs=job_nprocs(jobspec),
                requested_time=float(duration) if duration else None,
                connection=self.connection,
            )
        except Exception as error:  # noqa: BLE001 - a jobspec this plugin cannot read still runs
            answer = {**self.client.default_answer({"user": str(user)}), "error": f"{type(error).__name__}: {error}"}
        jobspec.setattr("system.iosets", answer)
