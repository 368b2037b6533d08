#!/usr/bin/python3
"""Replay an IO-SETS phase-level workload in SimGrid (reference engine for iosets).

Usage:
    /usr/bin/python3 benchmarks/simgrid_phase.py WORKLOAD.json OUT.json
        [--cfg=NAME:VALUE ...] [--byte-scale=K|auto]

Runs under Debian's system Python with Debian's ``python3-simgrid`` (SimGrid
3.32 in bookworm; install it with ``benchmarks/setup_simgrid.sh``).  Plain
stdlib otherwise; it does not import iosets.

Input: a *resolved* workload (docs/formats.md, "workload phases"): every job has
an integer ``set`` and a float ``priority`` > 0; ``phases`` is a list of
``[t_cpu, io_bytes]``.  Other keys (``w_iter``, ``profile``, ``window``...) are
ignored.

Output (JSON): ``{"wall_seconds": ..., "io_start": [[...] per job], "io_end":
[[...] per job], "io_request": [[...] per job], "events": N,
"simgrid_version", "cfg", "byte_scale"}`` with jobs
in file order and one entry per phase; ``wall_seconds`` covers building the
platform, creating the actors and ``Engine.run()`` (not JSON parsing or
writing).  ``events`` is the number of phases simulated.  One summary line is
printed on stdout.

Exit codes: 0 ok; 2 bad input (missing/unreadable file, job without set or
priority, ...); 3 SimGrid not importable.

Model (docs/explanation/models.md, the phase model) and how it is mapped onto SimGrid
-----------------------------------------------------------------------
* Platform: one host ``fs`` (speed 1 flop/s, unused) carrying one disk with
  read and write bandwidth B (times the byte scale K, see below), built with
  the s4u Python API::

      e = simgrid.Engine([prog, "--cfg=...", ...])
      zone = simgrid.NetZone.create_full_zone("zone")
      host = zone.create_host("fs", 1.0)
      disk = host.create_disk("disk", B * K, B * K)   # read_bw, write_bw
      disk.seal(); host.seal(); zone.seal()
      simgrid.Actor.create(job_id, host, job_actor, i)  # one per job
      e.run()

* Compute phases are ``simgrid.this_actor.sleep_for(t_cpu)`` (never slowed;
  the first one is a single ``sleep_for(release + t_cpu0)``; a zero-length
  compute phase does not call SimGrid at all).  An I/O phase is the blocking
  ``disk.write(round(io_bytes * K), priority)`` (SimGrid 3.32's
  ``Disk.write(size: int, priority: float = 1)``; ``Disk.write_async`` has no
  priority argument in the 3.32 bindings, hence one blocking actor per job).
  Dates are read with ``simgrid.Engine.clock``.

* Priority-weighted sharing comes from SimGrid itself: the disk model (S19)
  puts every I/O action on the disk's constraints in a max-min (lmm) system,
  weighted by the action's priority; on a single saturated constraint
  weighted max-min is exactly proportional sharing, x_i = p_i / sum_k p_k.
  Checked: 1e9-byte writes with priorities 1 and 0.1 (B = 1e9) end at 1.1 s
  and 2.0 s; with priorities 1, 0.1, 0.01 at 1.11, 2.1 and 3.0 s, as the
  proportional model gives.  No option is needed (there is no bound or
  penalty model on disks, unlike the LV08 network model with its
  bandwidth/latency factors and weight-S; no link is used here).

* Set-exclusive FCFS admission (as in the IO-SETS paper), as shared Python
  state (actors run one at a time, handing control over only at simcalls):
  per set, the performing job and a FIFO of waiting jobs ordered by
  (request date, job order in the file).  A job that requests I/O joins its
  set's FIFO; if the set is free it calls ``this_actor.yield_()`` and then
  admits the set's FCFS head (itself or another job); if it is not the
  performer it blocks on its own ``simgrid.Semaphore(0).acquire()``.  A job
  whose write ends frees its set and admits the head of the set's FIFO
  (``Semaphore.release``) before its next compute phase.  A zero-byte I/O
  phase completes at its request without waiting (it neither queues nor
  occupies its set).

* Same-date ordering (all I/O completions, then compute completions, i.e.
  requests, then admissions): SimGrid resumes in one scheduling round every
  actor whose activity finished in the same solver step, and an actor that
  calls ``yield_()`` (or is woken by a semaphore) runs in the next round at
  the same simulated date.  Completions and requests are applied in round 1
  (a zero-length compute phase after an I/O requests right away, still in
  round 1); an admission that could depend on another event of the same
  date (set found free by a request; FIFO head that requested at this very
  date when a set is freed) is made after a ``yield_()``, i.e. once every
  event of that date is in.  A head that requested strictly earlier is
  admitted at once (no same-date request can precede it).  Checked: results
  are identical when the actors are created in reverse order, and equal to
  an exact stdlib event-driven replay on tie-heavy workloads (integer dates,
  hundreds of simultaneous requests).

Numerical caveats (what limits io_end agreement with an exact engine)
--------------------------------------------------------------------
* ``Disk.write`` takes an integer size, and the S19 disk model advances an
  action by ``rint(rate * delta)`` units per solver step: every phase size
  and every event that interrupts an I/O phase is rounded to a whole unit.
  With whole bytes (``--byte-scale=1``) that is up to 0.5 B, ~0.5 ns at
  1 GB/s per rounding, and io_end differs from an exact replay by up to
  ~2e-8 s (EXCLUSIVE-FCFS) and ~1e-5 s (SET-10) on a 60-job, 20000 s
  workload.  Hence the default ``--byte-scale=auto``: SimGrid works in units
  of 1/K byte, K the largest power of two <= 2**20 with max(io_bytes)*K <=
  2**53 (so sizes stay exact integers in SimGrid's doubles); the disk
  bandwidth is B*K.  With it the same workloads agree to ~4e-12 s
  (EXCLUSIVE-FCFS) and ~3e-9 s (SET-10, median 1e-11 s).
* The clock is a running sum of solver steps and sleeps are counted down
  step by step (round-off ~1e-12 s per step at dates ~1e4 s), and any action
  whose remaining duration falls below ``surf/precision`` (1e-9 s by
  default) at a step is completed at that step: events closer than that are
  merged into the earlier date.  ``maxmin/precision`` (1e-5 by default, in
  (scaled) bytes/s) is the lmm solver's tolerance.  These are SimGrid 3.32's
  names (``precision/timing`` and ``precision/work-amount`` in later
  releases).  SimGrid's defaults are kept: tightening them
  (``--cfg=surf/precision:1e-13``, ``--cfg=maxmin/precision:1e-9``) changed
  no io_end on the workloads above, the integer rounding dominates.
* With chaotic policies (FAIR-SHARE, SHARE+PRIORITY) any last-bit difference
  grows about tenfold per 100 s of simulated time (measured: 1e-10 s at
  t=375 s, 1e-3 s at t=1400 s, then whole seconds): compare them with another
  engine through metric averages, not phase by phase.
* Only the ``thread`` context factory works from Python (raw, ucontext and
  boost abort), so each actor is an OS thread and most of the wall time is
  context switching (~0.1 ms per phase).

Options:
  --cfg=NAME:VALUE   passed to SimGrid (repeatable)
  --byte-scale=K     simulate in units of 1/K byte (K > 0 or ``auto``,
                     the default; see above).
"""

import json
import math
import os
import sys
import time

PROG = "simgrid_phase"


def fail(msg, code=2):
    sys.stderr.write(f"{PROG}: error: {msg}\n")
    sys.exit(code)


def _num(x, what):
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        fail(f"{what} must be a number, got {x!r}")
    x = float(x)
    if not math.isfinite(x):
        fail(f"{what} must be finite, got {x!r}")
    return x


def load_workload(path):
    """Parse and validate a resolved workload; returns (B, jobs)."""
    try:
        with open(path) as f:
            w = json.load(f)
    except FileNotFoundError:
        fail(f"workload file not found: {path}")
    except (OSError, ValueError) as exc:
        fail(f"cannot read workload {path}: {exc}")
    if not isinstance(w, dict):
        fail("workload must be a JSON object")
    if "bandwidth" not in w:
        fail("workload has no 'bandwidth'")
    B = _num(w["bandwidth"], "bandwidth")
    if B <= 0:
        fail(f"bandwidth must be > 0, got {B!r}")
    raw = w.get("jobs")
    if not isinstance(raw, list):
        fail("workload has no 'jobs' list")
    jobs = []
    for n, j in enumerate(raw):
        if not isinstance(j, dict):
            fail(f"job #{n} is not an object")
        jid = str(j.get("id", f"job{n}"))
        where = f"job #{n} ({jid})"
        s = j.get("set")
        if s is None:
            fail(f"{where} has no 'set' (the workload must be resolved: every job needs an integer set and a priority)")
        if isinstance(s, bool) or not isinstance(s, (int, float)) or float(s) != int(s):
            fail(f"{where}: 'set' must be an integer, got {s!r}")
        p = j.get("priority")
        if p is None:
            fail(f"{where} has no 'priority' (the workload must be resolved)")
        p = _num(p, where + " priority")
        if p <= 0:
            fail(f"{where}: priority must be > 0, got {p!r}")
        release = _num(j.get("release", 0.0), where + " release")
        if release < 0:
            fail(f"{where}: release must be >= 0, got {release!r}")
        phases = j.get("phases")
        if not isinstance(phases, list):
            fail(f"{where} has no 'phases' list")
        ph = []
        for k, pr in enumerate(phases):
            if not isinstance(pr, (list, tuple)) or len(pr) != 2:
                fail(f"{where} phase {k} must be [t_cpu, io_bytes], got {pr!r}")
            t = _num(pr[0], f"{where} phase {k} t_cpu")
            b = _num(pr[1], f"{where} phase {k} io_bytes")
            if t < 0 or b < 0:
                fail(f"{where} phase {k}: t_cpu and io_bytes must be >= 0, got {pr!r}")
            ph.append((t, b))
        jobs.append({"id": jid, "set": int(s), "priority": p, "release": release, "phases": ph})
    return B, jobs


def auto_byte_scale(jobs):
    """Largest power of two K <= 2**20 with max(io_bytes) * K <= 2**53.

    Sizes handed to SimGrid (round(io_bytes * K), converted to double inside
    SimGrid) then stay exact integers, and the whole-byte roundings of
    Disk.write and of the S19 disk model shrink to 1/K byte.
    """
    bmax = max((b for j in jobs for (_, b) in j["phases"]), default=0.0)
    k = 20
    while k > 0 and bmax * 2.0**k > 2.0**53:
        k -= 1
    return float(2**k)


def simulate(B, jobs, cfg_args, byte_scale=1.0):
    """Run the replay in SimGrid. Returns (io_request, io_start, io_end, events)."""
    import simgrid
    from simgrid import Actor, Engine, NetZone, Semaphore, this_actor

    e = Engine([PROG] + list(cfg_args))
    zone = NetZone.create_full_zone("zone")
    host = zone.create_host("fs", 1.0)
    disk = host.create_disk("disk", B * byte_scale, B * byte_scale)
    disk.seal()
    host.seal()
    zone.seal()

    n = len(jobs)
    io_req = [[None] * len(j["phases"]) for j in jobs]
    io_start = [[None] * len(j["phases"]) for j in jobs]
    io_end = [[None] * len(j["phases"]) for j in jobs]
    # Positive sizes never round down to a zero-byte phase.
    sizes = [[(max(1, int(round(b * byte_scale))) if b > 0 else 0) for (_, b) in j["phases"]] for j in jobs]

    # Shared admission state.  SimGrid runs one actor at a time (maestro hands
    # control over at simcalls only), so plain Python state is safe.
    performing = {}  # set id -> index of the job performing I/O, or None
    waiting = {}  # set id -> list of (request date, job index), sorted
    blocked = [False] * n  # job i is blocked in job_sem[i].acquire()
    job_sem = [Semaphore(0) for _ in range(n)]
    yield_ = this_actor.yield_

    def admit(s):
        """If set s is free, let its FCFS head perform; returns the admitted job or None."""
        q = waiting.get(s)
        if not q or performing.get(s) is not None:
            return None
        _, h = q.pop(0)
        performing[s] = h
        if blocked[h]:
            job_sem[h].release()
        return h

    def admit_after_completion(s, q, now):
        """Job just freed set s at date `now` and goes on computing."""
        if q:
            if q[0][0] < now:
                # The head requested strictly earlier: no request of this date can
                # precede it, admit it at once.
                admit(s)
            else:
                # The head requested at this very date: let every completion and
                # request of this date be applied first, then admit (a no-op if
                # another actor's pass did it already).
                yield_()
                admit(s)

    def job_actor(i):
        j = jobs[i]
        s, prio, phases, sz = j["set"], j["priority"], j["phases"], sizes[i]
        q = waiting.setdefault(s, [])
        carry = j["release"]  # the first compute phase ends at release + t_cpu
        freed = False  # this job freed its set at the current date
        for k, (t_cpu, _b) in enumerate(phases):
            d = carry + t_cpu
            carry = 0.0
            if d > 0:
                if freed:
                    admit_after_completion(s, q, Engine.clock)
                    freed = False
                this_actor.sleep_for(d)
            # (d == 0: the compute phase ends at once; its request belongs to the
            # same date as the I/O completion, and is applied before admissions.)
            now = Engine.clock
            io_req[i][k] = now
            if sz[k] <= 0:  # zero-byte I/O: completes at its request
                io_start[i][k] = now
                io_end[i][k] = now
                continue
            # Request: join the set's FIFO, ordered by (request date, job order).
            item = (now, i)
            if not q or q[-1] <= item:
                q.append(item)
            else:
                lo, hi = 0, len(q)
                while lo < hi:
                    mid = (lo + hi) // 2
                    if q[mid] <= item:
                        lo = mid + 1
                    else:
                        hi = mid
                q.insert(lo, item)
            freed = False
            if performing.get(s) is None:
                # Set free: other completions/requests of this very date may still
                # be pending in this scheduling round; yield so that they are
                # applied first, then admit the set's FCFS head (maybe another job).
                yield_()
                admit(s)
            if performing.get(s) != i:
                blocked[i] = True
                job_sem[i].acquire()  # released by admit() when i becomes the head
                blocked[i] = False
            io_start[i][k] = Engine.clock
            disk.write(sz[k], prio)
            io_end[i][k] = Engine.clock
            performing[s] = None
            freed = True
        if freed:
            admit_after_completion(s, q, Engine.clock)

    for i, j in enumerate(jobs):
        Actor.create(j["id"], host, job_actor, i)
    e.run()
    events = sum(len(j["phases"]) for j in jobs)
    missing = sum(1 for row in io_end for v in row if v is None)
    if missing:
        raise RuntimeError(f"{missing} phases did not complete in SimGrid")
    return io_req, io_start, io_end, events, simgrid


def main(argv):
    pos, cfg, byte_scale = [], [], "auto"
    for a in argv[1:]:
        if a.startswith("--cfg="):
            cfg.append(a)
        elif a.startswith("--byte-scale="):
            v = a.split("=", 1)[1]
            if v != "auto":
                try:
                    byte_scale = float(v)
                except ValueError:
                    fail(f"bad --byte-scale: {a}")
                if not (byte_scale > 0 and math.isfinite(byte_scale)):
                    fail("--byte-scale must be > 0 or 'auto'")
        elif a in ("-h", "--help"):
            sys.stdout.write(__doc__)
            return 0
        elif a.startswith("--"):
            fail(f"unknown option {a}")
        else:
            pos.append(a)
    if len(pos) != 2:
        fail(f"usage: {os.path.basename(argv[0])} WORKLOAD.json OUT.json [--cfg=NAME:VALUE ...] [--byte-scale=K]")
    wpath, opath = pos
    B, jobs = load_workload(wpath)
    if byte_scale == "auto":
        byte_scale = auto_byte_scale(jobs)
    odir = os.path.dirname(os.path.abspath(opath))
    if not os.path.isdir(odir):
        fail(f"output directory does not exist: {odir}")
    try:
        import simgrid  # noqa: F401
    except ImportError as exc:
        fail(f"SimGrid Python bindings not importable ({exc}); run benchmarks/setup_simgrid.sh", code=3)

    t0 = time.perf_counter()
    try:
        io_req, io_start, io_end, events, simgrid = simulate(B, jobs, cfg, byte_scale)
    except RuntimeError as exc:
        fail(f"SimGrid replay failed: {exc}", code=1)
    wall = time.perf_counter() - t0

    makespan = max((row[-1] for row in io_end if row), default=0.0)
    out = {
        "wall_seconds": wall,
        "io_start": io_start,
        "io_end": io_end,
        "io_request": io_req,
        "events": events,
        "simgrid_version": getattr(simgrid, "simgrid_version", "?"),
        "cfg": cfg,
        "byte_scale": byte_scale,
    }
    try:
        with open(opath, "w") as f:
            json.dump(out, f)
    except OSError as exc:
        fail(f"cannot write {opath}: {exc}")
    print(
        f"simgrid_phase: {len(jobs)} jobs, {events} phases, last io_end {makespan:.6f} s, wall {wall:.3f} s "
        f"(SimGrid {out['simgrid_version']}) -> {opath}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
