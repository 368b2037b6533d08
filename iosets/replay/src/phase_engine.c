/* Phase-level IO-SETS engine: see phase_engine.h for the model. */
#include "phase_engine.h"

#include <math.h>
#include <stdlib.h>

#include "dd_heap.h"
#include "ddouble.h"
#include "heap.h"

/* Dates closer than this (relative) are one date: far above the engine's
 * double-double rounding (about 1e-30), below any gap between two dates that
 * inputs given in doubles can hold apart (1e-16). */
#define SAME_DATE 1e-20

/* sum(p) over the performing jobs is kept incrementally (added on admission,
 * subtracted on completion), so an event costs O(log n) even when thousands of
 * sets perform; it is reset to 0 whenever the file system is idle and recomputed
 * from scratch every RESUM_PERIOD admissions, so it never drifts. */
#define RESUM_PERIOD 4096

typedef struct {
    const pe_input *in;
    pe_output *out;
    dd_heap compute;     /* (cpu_end, job): jobs in a compute phase */
    dd_heap io;          /* (finish tag, job): performing jobs */
    heap releases;       /* (release, job): jobs not started yet */
    int64_t *phase;      /* [n_jobs] index of the job's current phase */
    int32_t *set;        /* [n_jobs] dense set index */
    int32_t *next_wait;  /* [n_jobs] FIFO link inside a set's waiting queue */
    int32_t *head, *tail;/* [n_sets] waiting queue of each set */
    int32_t *performer;  /* [n_sets] performing job or -1 */
    int32_t *dirty;      /* sets that may admit at the current date */
    int32_t *requests;   /* [n_jobs] jobs whose compute ends at the current date */
    char *is_dirty;      /* [n_sets] */
    dd *work;            /* [n_jobs] 1 / (B p): the virtual time a byte of the job takes */
    double *remaining[2];/* [n_phases] bytes left at each window date (0 unless performing then) */
    int32_t n_sets, n_dirty;
    dd now;              /* date of the last processed event */
    /* The virtual clock counts V / B: V(t) = v_anchor + (t - t_anchor) / sum_priority while the
     * performing set stays the same; a job admitted at V0 with b bytes ends at V0 + b work[job]. */
    dd t_anchor, v_anchor;
    dd sum_priority;     /* of the performing jobs */
    dd next_io;          /* date of the first I/O completion, when some job performs */
    int64_t admissions;  /* since sum_priority was last recomputed */
    int next_probe;      /* next window date to record */
} engine;

static const dd NEVER = {INFINITY, 0.0};

/* A job's rate B p: the engine needs it and its inverse (the time a byte takes) finite and > 0. */
static int rate_ok(double rate)
{
    return rate > 0 && isfinite(rate) && isfinite(1.0 / rate);
}

static int validate(const pe_input *in, int64_t *bad)
{
    if (!(in->bandwidth > 0) || !isfinite(in->bandwidth))
        return PE_BAD_BANDWIDTH;
    if (!(in->window[0] < in->window[1]) || !isfinite(in->window[0]) || !isfinite(in->window[1]))
        return PE_BAD_WINDOW;
    for (int32_t j = 0; j < in->n_jobs; j++) {
        *bad = j;
        if (!(in->release[j] >= 0) || !isfinite(in->release[j]))
            return PE_BAD_RELEASE;
        if (!(in->priority[j] > 0) || !isfinite(in->priority[j]))
            return PE_BAD_PRIORITY;
        if (!rate_ok(in->bandwidth * in->priority[j]))
            return PE_BAD_RATE;
        if (in->phase_ptr[j + 1] < in->phase_ptr[j])
            return PE_BAD_PHASES;
    }
    for (int64_t k = in->phase_ptr[0]; k < in->phase_ptr[in->n_jobs]; k++) {
        *bad = k;
        if (!(in->t_cpu[k] >= 0) || !isfinite(in->t_cpu[k]))
            return PE_BAD_CPU;
        if (!(in->io_bytes[k] >= 0) || !isfinite(in->io_bytes[k]))
            return PE_BAD_BYTES;
    }
    return PE_OK;
}

static void mark_dirty(engine *e, int32_t set)
{
    if (!e->is_dirty[set]) {
        e->is_dirty[set] = 1;
        e->dirty[e->n_dirty++] = set;
    }
}

/* Starts the compute phase of the job's current phase at the current date. */
static inline void start_compute(engine *e, int32_t job)
{
    int64_t k = e->phase[job];
    dd end = dd_add_d(e->now, e->in->t_cpu[k]);
    e->out->cpu_start[k] = e->now.hi;
    e->out->cpu_end[k] = end.hi;
    dd_heap_push(&e->compute, end, job);
}

/* Ends the job's current I/O phase now and moves it to its next phase. */
static void finish_io(engine *e, int32_t job)
{
    int64_t k = e->phase[job];
    e->out->io_end[k] = e->now.hi;
    e->phase[job] = k + 1;
    if (k + 1 < e->in->phase_ptr[job + 1])
        start_compute(e, job);
}

/* Queues the job's I/O request in its set's FCFS queue. */
static void enqueue_request(engine *e, int32_t job)
{
    int32_t set = e->set[job];
    e->next_wait[job] = -1;
    if (e->tail[set] < 0)
        e->head[set] = job;
    else
        e->next_wait[e->tail[set]] = job;
    e->tail[set] = job;
    mark_dirty(e, set);
}

static dd vclock_at(const engine *e, dd date)
{
    return dd_add(e->v_anchor, dd_div(dd_sub(date, e->t_anchor), e->sum_priority));
}

/* V now; a busy period starts the clock at 0. */
static dd vclock_now(const engine *e)
{
    if (e->io.size == 0)
        return dd_of(0.0);
    if (e->t_anchor.hi == e->now.hi && e->t_anchor.lo == e->now.lo)
        return e->v_anchor; /* a completion anchored the clock at this date */
    return vclock_at(e, e->now);
}

static void set_anchor(engine *e, dd date, dd v)
{
    e->t_anchor = date;
    e->v_anchor = v;
}

static dd exact_sum_priority(const engine *e)
{
    dd s = dd_of(0.0);
    for (int64_t i = 0; i < e->io.size; i++)
        s = dd_add_d(s, e->in->priority[e->io.items[i].id]);
    return s;
}

/* After the performing set changed (anchored at the current date): the next completion. */
static void update_rates(engine *e)
{
    if (e->io.size == 0)
        return;
    if (e->admissions >= RESUM_PERIOD) {
        e->sum_priority = exact_sum_priority(e);
        e->admissions = 0;
    }
    e->next_io = dd_add(e->t_anchor, dd_mul(dd_sub(e->io.items[0].key, e->v_anchor), e->sum_priority));
}

/* Each free set among the dirty ones admits its FCFS head; returns 1 if one did. */
static int admit(engine *e)
{
    int admitted = 0;
    dd v = {0.0, 0.0};
    for (int32_t i = 0; i < e->n_dirty; i++) {
        int32_t set = e->dirty[i];
        e->is_dirty[set] = 0;
        int32_t job = e->head[set];
        if (e->performer[set] >= 0 || job < 0)
            continue;
        if (!admitted) {
            v = vclock_now(e);
            set_anchor(e, e->now, v);
            admitted = 1;
        }
        e->head[set] = e->next_wait[job];
        if (e->head[set] < 0)
            e->tail[set] = -1;
        e->performer[set] = job;
        int64_t k = e->phase[job];
        e->out->io_start[k] = e->now.hi;
        dd_heap_push(&e->io, dd_add(v, dd_mul_d(e->work[job], e->in->io_bytes[k])), job);
        e->sum_priority = dd_add_d(e->sum_priority, e->in->priority[job]);
        e->admissions++;
    }
    e->n_dirty = 0;
    return admitted;
}

/* Whether a window date not recorded yet comes at or before `date`. */
static int probe_due(const engine *e, dd date)
{
    return e->next_probe < 2 && dd_less_eq(dd_of(e->in->window[e->next_probe]), date);
}

/* Records the bytes left of every performing phase at the window dates up to `until`. */
static void fire_probes(engine *e, dd until)
{
    while (probe_due(e, until)) {
        dd date = dd_of(e->in->window[e->next_probe]);
        double *remaining = e->remaining[e->next_probe];
        if (e->io.size > 0 && dd_less_eq(e->now, date)) {
            dd v = vclock_at(e, date);
            for (int64_t i = 0; i < e->io.size; i++) {
                int32_t job = e->io.items[i].id;
                double left = dd_div(dd_sub(e->io.items[i].key, v), e->work[job]).hi;
                remaining[e->phase[job]] = left > 0 ? left : 0;
            }
        }
        e->next_probe++;
    }
}

static dd same_date_limit(dd date)
{
    return dd_add_d(date, SAME_DATE * (fabs(date.hi) > 1.0 ? fabs(date.hi) : 1.0));
}

/* Inserts `job` into the sorted array `jobs` of `count` entries (a date rarely has many). */
static void insert_sorted(int32_t *jobs, int32_t count, int32_t job)
{
    int32_t i = count;
    while (i > 0 && jobs[i - 1] > job) {
        jobs[i] = jobs[i - 1];
        i--;
    }
    jobs[i] = job;
}

/* Every I/O completion up to `limit` happens now (V is exactly the first tag when
 * an I/O ends first); re-anchors the clock at the current date. */
static void complete_io(engine *e, dd limit, int io_first)
{
    dd v = io_first ? e->io.items[0].key : vclock_at(e, e->now);
    dd v_limit = dd_add_d(v, dd_sub(limit, e->now).hi / e->sum_priority.hi); /* a tolerance: double is enough */
    set_anchor(e, e->now, v);
    while (e->io.size > 0 && dd_less_eq(e->io.items[0].key, v_limit)) {
        int32_t job = dd_heap_pop(&e->io).id;
        int32_t set = e->set[job];
        e->performer[set] = -1;
        mark_dirty(e, set);
        e->sum_priority = dd_add_d(e->sum_priority, -e->in->priority[job]);
        finish_io(e, job);
        e->out->n_events++;
    }
    if (e->io.size == 0)
        e->sum_priority = dd_of(0.0); /* exact again at every idle instant */
}

/* Every compute completion up to `limit`: the job requests I/O; a zero-byte I/O
 * phase ends at once (its next compute may end at this date too); the requests
 * of one date enter their sets' queues in job order. */
static void complete_compute(engine *e, dd limit)
{
    int32_t n_requests = 0;
    while (e->compute.size > 0 && dd_less_eq(e->compute.items[0].key, limit)) {
        int32_t job = dd_heap_pop(&e->compute).id;
        int64_t k = e->phase[job];
        e->out->n_events++;
        if (e->in->io_bytes[k] == 0) {
            e->out->io_start[k] = e->now.hi;
            finish_io(e, job);
        } else {
            insert_sorted(e->requests, n_requests++, job);
        }
    }
    for (int32_t i = 0; i < n_requests; i++)
        enqueue_request(e, e->requests[i]);
}

/* The date of the next compute or I/O completion, NEVER when none is left. */
static dd next_event(const engine *e)
{
    dd t_cpu = e->compute.size > 0 ? e->compute.items[0].key : NEVER;
    return e->io.size > 0 ? dd_min(e->next_io, t_cpu) : t_cpu;
}

/* Processes every event at `date`, the next one: I/O completions, then compute
 * completions, then admissions. */
static void engine_step(engine *e, dd date)
{
    dd limit = same_date_limit(date);
    int io_due = e->io.size > 0 && dd_less_eq(e->next_io, limit);
    int io_first = e->io.size > 0 && dd_less_eq(e->next_io, date);
    if (probe_due(e, date))
        fire_probes(e, date);
    e->now = date;
    if (io_due)
        complete_io(e, limit, io_first);
    complete_compute(e, limit);
    if (admit(e) || io_due)
        update_rates(e);
}

/* A release starts a compute phase; it is not an event of its own. */
static void release_jobs(engine *e, double date)
{
    fire_probes(e, dd_of(date));
    e->now = dd_of(date);
    while (e->releases.size > 0 && e->releases.items[0].key <= date)
        start_compute(e, heap_pop(&e->releases).id);
}

/* Releases and steps in date order (a release first at a tie) until nothing is left,
 * or the interrupt hook asks to stop (PE_INTERRUPTED). */
static int run(engine *e)
{
    for (int64_t dates = 1;; dates++) {
        if (interrupt_due(&e->in->interrupt, dates - 1, dates))
            return PE_INTERRUPTED;
        double t_rel = e->releases.size > 0 ? e->releases.items[0].key : INFINITY;
        dd date = next_event(e);
        if (t_rel < INFINITY && dd_less_eq(dd_of(t_rel), date))
            release_jobs(e, t_rel);
        else if (date.hi < INFINITY)
            engine_step(e, date);
        else
            return PE_OK;
    }
}

/* The first job with a phase left (its dates overflowed to infinity), or -1. */
static int32_t unfinished_job(const engine *e)
{
    for (int32_t j = 0; j < e->in->n_jobs; j++)
        if (e->phase[j] < e->in->phase_ptr[j + 1])
            return j;
    return -1;
}

typedef struct {
    int64_t label;
    int32_t job;
} labelled;

static int by_label(const void *a, const void *b)
{
    const labelled *x = a, *y = b;
    if (x->label != y->label)
        return x->label < y->label ? -1 : 1;
    return (x->job > y->job) - (x->job < y->job);
}

/* Dense set indices (in label order) of the jobs' set labels; returns the set count or -1. */
static int32_t dense_sets(const pe_input *in, int32_t *dense)
{
    labelled *order = malloc(sizeof(labelled) * (size_t)(in->n_jobs > 0 ? in->n_jobs : 1));
    if (order == NULL)
        return -1;
    for (int32_t j = 0; j < in->n_jobs; j++)
        order[j] = (labelled){in->set[j], j};
    qsort(order, (size_t)in->n_jobs, sizeof(labelled), by_label);
    int32_t n_sets = 0;
    for (int32_t i = 0; i < in->n_jobs; i++) {
        if (i > 0 && order[i].label != order[i - 1].label)
            n_sets++;
        dense[order[i].job] = n_sets;
    }
    free(order);
    return in->n_jobs > 0 ? n_sets + 1 : 0;
}

static void engine_free(engine *e)
{
    dd_heap_free(&e->compute);
    dd_heap_free(&e->io);
    heap_free(&e->releases);
    free(e->phase);
    free(e->set);
    free(e->work);
    free(e->next_wait);
    free(e->head);
    free(e->tail);
    free(e->performer);
    free(e->dirty);
    free(e->is_dirty);
    free(e->requests);
    free(e->remaining[0]);
    free(e->remaining[1]);
}

/* Allocates the per-set arrays once the set count is known. */
static int init_sets(engine *e)
{
    size_t ns = (size_t)(e->n_sets > 0 ? e->n_sets : 1);
    e->head = malloc(sizeof(int32_t) * ns);
    e->tail = malloc(sizeof(int32_t) * ns);
    e->performer = malloc(sizeof(int32_t) * ns);
    e->dirty = malloc(sizeof(int32_t) * ns);
    e->is_dirty = calloc(ns, 1);
    if (!dd_heap_init(&e->io, e->n_sets) || !e->head || !e->tail || !e->performer || !e->dirty || !e->is_dirty)
        return 0;
    for (int32_t s = 0; s < e->n_sets; s++)
        e->head[s] = e->tail[s] = e->performer[s] = -1;
    return 1;
}

static int engine_init(engine *e, const pe_input *in, pe_output *out)
{
    int32_t nj = in->n_jobs;
    size_t n = (size_t)(nj > 0 ? nj : 1);
    size_t n_phases = (size_t)(in->phase_ptr[nj] > 0 ? in->phase_ptr[nj] : 1);
    *e = (engine){.in = in, .out = out};
    int ok = dd_heap_init(&e->compute, nj) & heap_init(&e->releases, nj);
    e->phase = malloc(sizeof(int64_t) * n);
    e->set = malloc(sizeof(int32_t) * n);
    e->work = malloc(sizeof(dd) * n);
    e->next_wait = malloc(sizeof(int32_t) * n);
    e->requests = malloc(sizeof(int32_t) * n);
    e->remaining[0] = calloc(n_phases, sizeof(double));
    e->remaining[1] = calloc(n_phases, sizeof(double));
    if (!ok || !e->phase || !e->set || !e->work || !e->next_wait || !e->requests || !e->remaining[0] || !e->remaining[1])
        return 0;
    e->n_sets = dense_sets(in, e->set);
    if (e->n_sets < 0 || !init_sets(e))
        return 0;
    for (int32_t j = 0; j < nj; j++) {
        e->phase[j] = in->phase_ptr[j];
        e->work[j] = dd_div(dd_of(1.0), two_prod(in->bandwidth, in->priority[j]));
        if (in->phase_ptr[j + 1] > in->phase_ptr[j])
            heap_push(&e->releases, in->release[j], j);
    }
    return 1;
}

static pe_metrics measure(const engine *e)
{
    const pe_input *in = e->in;
    pe_timeline t = {
        .n_jobs = in->n_jobs, .phase_ptr = in->phase_ptr, .io_bytes = in->io_bytes,
        .cpu_start = e->out->cpu_start, .cpu_end = e->out->cpu_end,
        .io_start = e->out->io_start, .io_end = e->out->io_end,
        .remaining = {e->remaining[0], e->remaining[1]},
        .bandwidth = in->bandwidth, .window = {in->window[0], in->window[1]},
    };
    return pe_window_metrics(&t);
}

int pe_run(const pe_input *in, pe_output *out, int64_t *bad_index)
{
    *bad_index = -1;
    int rc = validate(in, bad_index);
    if (rc != PE_OK)
        return rc;
    *bad_index = -1;
    out->n_events = 0;
    engine e;
    if (!engine_init(&e, in, out)) {
        engine_free(&e);
        return PE_NOMEM;
    }
    rc = run(&e);
    if (rc == PE_OK && (*bad_index = unfinished_job(&e)) >= 0)
        rc = PE_OVERFLOW;
    if (rc == PE_OK)
        out->metrics = measure(&e);
    engine_free(&e);
    return rc;
}
