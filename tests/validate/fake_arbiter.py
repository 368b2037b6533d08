"""A small stand-in for ``iosets arbiter`` (wire protocol v1, one thread): ``python fake_arbiter.py --listen unix:PATH
--policy P --bandwidth B``.

It admits at most one job per set (FCFS within a set) and shares B by priority among the performing jobs, as
the protocol says, so that ``iosets validate`` can be tested through an arbiter before the daemon lands.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import selectors
import signal
import socket
import sys
from dataclasses import dataclass, field


@dataclass(eq=False)
class Job:
    conn: socket.socket
    buffer: bytes = b""
    job_id: str | None = None
    set: int = 0
    priority: float = 1.0
    waiting: int | None = None  # BEGIN arrival number while waiting
    performing: bool = False
    rate: float = 0.0
    out: list[str] = field(default_factory=list)


class Arbiter:
    def __init__(self, policy: str, bandwidth: float):
        self.policy, self.bandwidth = policy, bandwidth
        self.jobs: dict[socket.socket, Job] = {}
        self.arrivals = itertools.count()
        self.sets = itertools.count(1 << 20)

    def line(self, job: Job, text: str) -> None:
        words = text.split()
        if job.job_id is None:
            if len(words) != 5 or words[:2] != ["HELLO", "1"]:
                return self.refuse(job, "expected HELLO 1 <job_id> <set> <priority>")
            if any(other.job_id == words[2] for other in self.jobs.values()):
                return self.refuse(job, f"job {words[2]} is already connected")
            job.job_id, job.set, job.priority = words[2], int(words[3]), float(words[4])
            if self.policy == "exclusive-fcfs":
                job.set, job.priority = 0, 1.0
            elif self.policy in ("fair-share", "share-priority"):
                job.set = next(self.sets)
                job.priority = 1.0 if self.policy == "fair-share" else job.priority
            job.out.append(f"OK {self.bandwidth:.17g}")
        elif words and words[0] == "BEGIN":
            if job.waiting is not None or job.performing:
                job.out.append("ERR phase already open")
                return
            job.waiting = next(self.arrivals)
            self.admit()
        elif words == ["END"] and job.performing:
            job.performing = False
            self.admit()
        elif words == ["BYE"]:
            self.drop(job)

    def refuse(self, job: Job, reason: str) -> None:
        job.out.append(f"ERR {reason}")
        self.flush(job)
        self.drop(job)

    def admit(self) -> None:
        busy = {job.set for job in self.jobs.values() if job.performing}
        for job in sorted((j for j in self.jobs.values() if j.waiting is not None), key=lambda j: j.waiting):
            if job.set not in busy:
                busy.add(job.set)
                job.waiting, job.performing, job.rate = None, True, 0.0
        performing = [job for job in self.jobs.values() if job.performing]
        total = sum(job.priority for job in performing)
        for job in performing:
            rate = self.bandwidth * job.priority / total
            if job.rate == 0.0:
                job.out.append(f"GRANT {rate:.17g}")
            elif rate != job.rate:
                job.out.append(f"RATE {rate:.17g}")
            job.rate = rate

    def flush(self, job: Job) -> None:
        if job.out:
            with contextlib.suppress(OSError):
                job.conn.sendall("".join(f"{text}\n" for text in job.out).encode())
            job.out.clear()

    def drop(self, job: Job) -> None:
        if self.jobs.pop(job.conn, None) is not None:
            selector.unregister(job.conn)
            job.conn.close()
            self.admit()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--listen", required=True)
    parser.add_argument("--policy", required=True)
    parser.add_argument("--bandwidth", type=float, required=True)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    path = args.listen.removeprefix("unix:")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(256)
    arbiter = Arbiter(args.policy, args.bandwidth)
    selector.register(server, selectors.EVENT_READ)
    try:
        while True:
            for key, _ in selector.select():
                if key.fileobj is server:
                    conn, _ = server.accept()
                    arbiter.jobs[conn] = Job(conn)
                    selector.register(conn, selectors.EVENT_READ)
                    continue
                job = arbiter.jobs.get(key.fileobj)
                if job is None:
                    continue
                data = job.conn.recv(4096)
                if not data:
                    arbiter.drop(job)
                    continue
                job.buffer += data
                while b"\n" in job.buffer and job.conn in arbiter.jobs:
                    text, job.buffer = job.buffer.split(b"\n", 1)
                    arbiter.line(job, text.decode())
                for other in list(arbiter.jobs.values()):
                    arbiter.flush(other)
    finally:
        os.unlink(path)


selector = selectors.DefaultSelector()

if __name__ == "__main__":
    main()
