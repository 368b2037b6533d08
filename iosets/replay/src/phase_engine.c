/* Phase-level IO-SETS engine: see phase_engine.h for the model. */
#include "phase_engine.h"

#include <math.h>
#include <stdlib.h>

#include "heap.h"

typedef struct {
    const pe_input *in;
    pe_output *out;
    heap compute;        /* (cpu_end, job): jobs in a compute phase */
    heap io;             /* (finish tag, job): performing jobs */
    int64_t *phase;      /* [n_jobs] index of the job's current phase */
    int32_t *next_wait;  /* [n_jobs] FIFO link inside a set's waiting queue */
    int32_t *head, *tail;/* [n_sets] waiting queue of each set */
    int32_t *performer;  /* [n_sets] performing job or -1 */
    int32_t *dirty;      /* sets that may admit at the current date */
    int32_t *requests;   /* [n_jobs] jobs whose compute ends at the current date */
    char *is_dirty;      /* [n_sets] */
    int32_t n_dirty;
    double now;          /* date of the last processed event */
    double vclock;       /* virtual clock V */
    double sum_priority; /* sum of the performing jobs' priorities */
    int next_probe;
} engine;

static int validate(const pe_input *in, int64_t *bad)
{
    if (!(in->bandwidth > 0) || !isfinite(in->bandwidth))
        return PE_BAD_BANDWIDTH;
    for (int32_t j = 0; j < in->n_jobs; j++) {
        *bad = j;
        if (!(in->release[j] >= 0) || !isfinite(in->release[j]))
            return PE_BAD_RELEASE;
        if (in->set[j] < 0 || in->set[j] >= in->n_sets)
            return PE_BAD_SET;
        if (!(in->priority[j] > 0) || !isfinite(in->priority[j]))
            return PE_BAD_PRIORITY;
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
static void start_compute(engine *e, int32_t job)
{
    int64_t k = e->phase[job];
    e->out->cpu_start[k] = e->now;
    e->out->cpu_end[k] = e->now + e->in->t_cpu[k];
    heap_push(&e->compute, e->out->cpu_end[k], job);
}

/* Ends the job's current I/O phase now and moves it to its next phase. */
static void finish_io(engine *e, int32_t job)
{
    int64_t k = e->phase[job];
    e->out->io_end[k] = e->now;
    e->phase[job] = k + 1;
    if (k + 1 < e->in->phase_ptr[job + 1])
        start_compute(e, job);
}

/* Queues the job's I/O request in its set's FCFS queue. */
static void enqueue_request(engine *e, int32_t job)
{
    int32_t set = e->in->set[job];
    e->next_wait[job] = -1;
    if (e->tail[set] < 0)
        e->head[set] = job;
    else
        e->next_wait[e->tail[set]] = job;
    e->tail[set] = job;
    mark_dirty(e, set);
}

static void recompute_sum_priority(engine *e)
{
    double s = 0;
    for (int64_t i = 0; i < e->io.size; i++)
        s += e->in->priority[e->io.items[i].id];
    e->sum_priority = s;
    if (e->io.size == 0)
        e->vclock = 0; /* rebase the virtual clock at every idle instant */
}

/* Each free set among the dirty ones admits its FCFS head. */
static void admit(engine *e)
{
    int changed = 0;
    for (int32_t i = 0; i < e->n_dirty; i++) {
        int32_t set = e->dirty[i];
        e->is_dirty[set] = 0;
        int32_t job = e->head[set];
        if (e->performer[set] >= 0 || job < 0)
            continue;
        e->head[set] = e->next_wait[job];
        if (e->head[set] < 0)
            e->tail[set] = -1;
        e->performer[set] = job;
        int64_t k = e->phase[job];
        e->out->io_start[k] = e->now;
        heap_push(&e->io, e->vclock + e->in->io_bytes[k] / e->in->priority[job], job);
        changed = 1;
    }
    e->n_dirty = 0;
    if (changed)
        recompute_sum_priority(e);
}

static double next_io_date(const engine *e)
{
    if (e->io.size == 0)
        return INFINITY;
    return e->now + (e->io.items[0].key - e->vclock) * e->sum_priority / e->in->bandwidth;
}

/* Records the remaining bytes of every performing phase at probe dates up to `until`. */
static void fire_probes(engine *e, double until)
{
    while (e->next_probe < PE_N_PROBES && e->in->probe[e->next_probe] <= until) {
        double date = e->in->probe[e->next_probe];
        double *remaining = e->out->remaining[e->next_probe];
        if (remaining != NULL && e->io.size > 0 && date >= e->now) {
            double v = e->vclock + (date - e->now) * e->in->bandwidth / e->sum_priority;
            for (int64_t i = 0; i < e->io.size; i++) {
                int32_t job = e->io.items[i].id;
                double left = (e->io.items[i].key - v) * e->in->priority[job];
                remaining[e->phase[job]] = left > 0 ? left : 0;
            }
        }
        e->next_probe++;
    }
}

/* Dates closer than this (relative) are one date: the virtual clock's rounding
 * must not reorder events that coincide in exact arithmetic. */
#define SAME_DATE 1e-12

static double same_date_limit(double date)
{
    return date + SAME_DATE * (fabs(date) > 1.0 ? fabs(date) : 1.0);
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

/* Processes every event at the next date; returns 0 when nothing is left. */
static int engine_step(engine *e)
{
    double t_cpu = e->compute.size ? e->compute.items[0].key : INFINITY;
    double t_io = next_io_date(e);
    double date = t_io < t_cpu ? t_io : t_cpu;
    if (date == INFINITY)
        return 0;
    double limit = same_date_limit(date);
    fire_probes(e, date);
    if (e->io.size > 0) /* the virtual clock at `date`, exact when an I/O ends first */
        e->vclock = t_io <= t_cpu ? e->io.items[0].key
                                  : e->vclock + (date - e->now) * e->in->bandwidth / e->sum_priority;
    double tag_limit = e->io.size > 0
        ? e->vclock + (limit - date) * e->in->bandwidth / e->sum_priority : -INFINITY;
    e->now = date;
    if (t_io <= limit) { /* every I/O completion at this date, first */
        while (e->io.size > 0 && e->io.items[0].key <= tag_limit) {
            int32_t job = heap_pop(&e->io).id;
            int32_t set = e->in->set[job];
            e->performer[set] = -1;
            mark_dirty(e, set);
            finish_io(e, job);
            e->out->n_events++;
        }
        recompute_sum_priority(e);
    }
    /* then every compute completion: the job requests I/O; a zero-byte I/O phase
     * ends at once (its next compute may end at this date too); the requests of
     * one date enter their sets' queues in job order */
    int32_t n_requests = 0;
    while (e->compute.size > 0 && e->compute.items[0].key <= limit) {
        int32_t job = heap_pop(&e->compute).id;
        int64_t k = e->phase[job];
        e->out->n_events++;
        if (e->in->io_bytes[k] == 0) {
            e->out->io_start[k] = e->now;
            finish_io(e, job);
        } else {
            insert_sorted(e->requests, n_requests++, job);
        }
    }
    for (int32_t i = 0; i < n_requests; i++)
        enqueue_request(e, e->requests[i]);
    admit(e);
    return 1;
}

static void engine_free(engine *e)
{
    heap_free(&e->compute);
    heap_free(&e->io);
    free(e->phase);
    free(e->next_wait);
    free(e->head);
    free(e->tail);
    free(e->performer);
    free(e->dirty);
    free(e->is_dirty);
    free(e->requests);
}

static int engine_init(engine *e, const pe_input *in, pe_output *out)
{
    int32_t nj = in->n_jobs, ns = in->n_sets;
    *e = (engine){.in = in, .out = out};
    int ok = heap_init(&e->compute, nj) & heap_init(&e->io, ns);
    e->phase = malloc(sizeof(int64_t) * (size_t)(nj > 0 ? nj : 1));
    e->next_wait = malloc(sizeof(int32_t) * (size_t)(nj > 0 ? nj : 1));
    e->head = malloc(sizeof(int32_t) * (size_t)(ns > 0 ? ns : 1));
    e->tail = malloc(sizeof(int32_t) * (size_t)(ns > 0 ? ns : 1));
    e->performer = malloc(sizeof(int32_t) * (size_t)(ns > 0 ? ns : 1));
    e->dirty = malloc(sizeof(int32_t) * (size_t)(ns > 0 ? ns : 1));
    e->is_dirty = calloc((size_t)(ns > 0 ? ns : 1), 1);
    e->requests = malloc(sizeof(int32_t) * (size_t)(nj > 0 ? nj : 1));
    if (!ok || !e->phase || !e->next_wait || !e->head || !e->tail || !e->performer ||
        !e->dirty || !e->is_dirty || !e->requests)
        return 0;
    for (int32_t s = 0; s < ns; s++)
        e->head[s] = e->tail[s] = e->performer[s] = -1;
    return 1;
}

int pe_run(const pe_input *in, pe_output *out, int64_t *bad_index)
{
    *bad_index = -1;
    int rc = validate(in, bad_index);
    if (rc != PE_OK)
        return rc;
    *bad_index = -1;
    out->n_events = 0;

    /* Releases are processed in date order (ties by job index) as compute starts. */
    engine e;
    if (!engine_init(&e, in, out)) {
        engine_free(&e);
        return PE_NOMEM;
    }
    heap releases;
    if (!heap_init(&releases, in->n_jobs)) {
        engine_free(&e);
        return PE_NOMEM;
    }
    for (int32_t j = 0; j < in->n_jobs; j++) {
        e.phase[j] = in->phase_ptr[j];
        if (in->phase_ptr[j + 1] > in->phase_ptr[j])
            heap_push(&releases, in->release[j], j);
    }
    for (;;) {
        double t_rel = releases.size ? releases.items[0].key : INFINITY;
        double t_cpu = e.compute.size ? e.compute.items[0].key : INFINITY;
        if (t_rel <= t_cpu && t_rel <= next_io_date(&e) && t_rel < INFINITY) {
            /* a release starts a compute phase; it is not an event of its own */
            fire_probes(&e, t_rel);
            if (e.io.size > 0)
                e.vclock += (t_rel - e.now) * in->bandwidth / e.sum_priority;
            e.now = t_rel;
            while (releases.size > 0 && releases.items[0].key <= t_rel)
                start_compute(&e, heap_pop(&releases).id);
            continue;
        }
        if (!engine_step(&e))
            break;
    }
    heap_free(&releases);
    engine_free(&e);
    return PE_OK;
}
