"""Pure-Python reference engine for the phase-level model (docs/explanation/models.md, the phase model), for tests only.

Deliberately simple and slow, and numerically different from the C engine: the
clock jumps from event date to event date and every performing I/O phase keeps
its *remaining bytes*, decreased at each event by ``rate * elapsed`` with
``rate = B * p_j / sum(p of performing jobs)``. (The C engine uses a virtual
clock and finish tags instead.) Dates closer than ``REL_TOL`` (relative) are
one date.

Rules, straight from the phase model (docs/explanation/models.md): a job starts its first compute phase at its
release, then alternates compute (``t_cpu``, never slowed) and I/O
(``io_bytes``). At most one job per set performs, FCFS within a set by request
date, ties by job index. At one date: every I/O completion (set freed, next
compute starts at that date), then every compute completion (I/O request),
then each free set admits its FCFS head. A zero-byte I/O completes at its
request without waiting for its set.
"""

import bisect
import itertools
import math
from dataclasses import dataclass, field

REL_TOL = 1e-9


@dataclass
class Phase:
    """One (compute, I/O) phase and what happened to it."""

    t_cpu: float
    io_bytes: float
    cpu_start: float = math.nan
    cpu_end: float = math.nan
    io_start: float = math.nan
    io_end: float = math.nan
    progress: list = field(default_factory=list)  # (date, bytes moved so far), linear in between

    def moved_before(self, date: float) -> float:
        """Bytes of this I/O phase moved before ``date``."""
        if self.io_bytes == 0 or not date > self.io_start:
            return 0.0
        if date >= self.io_end:
            return self.io_bytes
        for (d0, m0), (d1, m1) in itertools.pairwise(self.progress):
            if d0 <= date <= d1 and d1 > d0:
                return m0 + (m1 - m0) * (date - d0) / (d1 - d0)
        raise AssertionError("date inside the I/O phase but outside its progress record")


def simulate(release, sets, priority, phases, bandwidth, tol=REL_TOL):
    """Replay jobs given as plain lists; returns, per job, its list of :class:`Phase`.

    With ``fractions.Fraction`` inputs and ``tol=0`` the replay is exact.
    """
    n = len(release)
    timeline = [[Phase(c, b) for c, b in job_phases] for job_phases in phases]
    current = [0] * n  # index of each job's current phase
    state = ["new" if timeline[j] else "done" for j in range(n)]  # new/cpu/queued/io/done
    remaining = [0.0] * n  # bytes left for performing jobs
    queue = {s: [] for s in sets}  # FIFO of waiting jobs per set
    performer = {s: None for s in sets}
    now = 0

    def phase(j):
        return timeline[j][current[j]]

    def start_compute(j, date):
        ph = phase(j)
        ph.cpu_start, ph.cpu_end = date, date + ph.t_cpu
        state[j] = "cpu"

    def end_io(j, date):
        ph = phase(j)
        ph.io_end = date
        ph.progress.append((date, ph.io_bytes))
        current[j] += 1
        if current[j] < len(timeline[j]):
            start_compute(j, date)
        else:
            state[j] = "done"

    def request_io(j):
        ph = phase(j)
        if ph.io_bytes == 0:  # nothing to move: no waiting for the set
            ph.io_start = now
            end_io(j, now)
        else:
            state[j] = "queued"
            queue[sets[j]].append(j)

    while any(s != "done" for s in state):
        performing = [j for j in range(n) if state[j] == "io"]
        total = sum(priority[j] for j in performing)
        rate = {j: bandwidth * priority[j] / total for j in performing}
        finish = {j: now + remaining[j] / rate[j] for j in performing}
        candidates = [release[j] for j in range(n) if state[j] == "new"]
        candidates += [phase(j).cpu_end for j in range(n) if state[j] == "cpu"]
        candidates += list(finish.values())
        date = min(candidates)
        close = date + tol * max(abs(date), 1)  # anything up to here happens at `date`

        for j in performing:  # move bytes up to `date`
            remaining[j] -= rate[j] * (date - now)
            phase(j).progress.append((date, phase(j).io_bytes - remaining[j]))
        now = date

        for j in range(n):  # releases just start compute phases
            if state[j] == "new" and release[j] <= close:
                start_compute(j, release[j])
        for j in performing:  # 1. every I/O completion
            if finish[j] <= close:
                performer[sets[j]] = None
                end_io(j, now)
        due = [j for j in range(n) if state[j] == "cpu" and phase(j).cpu_end <= close]
        while due:  # 2. every compute completion, in job order (a chain may re-enter)
            j = due.pop(0)
            request_io(j)
            if state[j] == "cpu" and phase(j).cpu_end <= close:  # a zero-byte I/O, then zero compute
                bisect.insort(due, j)
        for s in queue:  # 3. each free set admits its FCFS head
            if performer[s] is None and queue[s]:
                j = queue[s].pop(0)
                performer[s], state[j] = j, "io"
                remaining[j] = phase(j).io_bytes
                phase(j).io_start = now
                phase(j).progress = [(now, 0.0)]
    return timeline


def window_metrics(timeline, bandwidth, window):
    """(utilization, io_slowdown, max_stretch) of the phase model (docs/explanation/models.md) over ``window``."""
    tb, te = window
    width = te - tb
    n = len(timeline)
    ratios, stretches, cpu_total = [], [], 0.0
    for job_phases in timeline:
        e_cpu = e_io = 0.0
        e_iter = 0
        for ph in job_phases:
            e_cpu += max(0.0, min(ph.cpu_end, te) - max(ph.cpu_start, tb))
            if ph.io_bytes > 0:
                fraction = (ph.moved_before(te) - ph.moved_before(tb)) / ph.io_bytes
                e_io += ph.io_bytes / bandwidth * fraction
            if tb <= ph.io_end <= te:
                e_iter += 1
        t_io = sum(ph.io_bytes / bandwidth for ph in job_phases) / max(len(job_phases), 1)
        cpu_total += e_cpu
        # T_io = 0 (only zero-byte phases) would divide by zero: such jobs are left out
        if e_iter > 0 and t_io > 0:
            ratios.append((width - e_cpu) / (t_io * e_iter))
        if e_cpu + e_io > 0:
            stretches.append(width / (e_cpu + e_io))
    utilization = cpu_total / (n * width) if stretches else math.nan  # no work inside: nothing measured
    if not ratios:
        slowdown = math.nan
    elif min(ratios) <= 0:  # a job computing through the whole window: a zero factor
        slowdown = 0.0
    else:
        slowdown = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    stretch = max(stretches) if stretches else math.nan
    return utilization, slowdown, stretch
