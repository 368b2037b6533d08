/* aIOLi (the aIOLi paper; Lebre et al. 2006, as in AGIOS): reordering and
 * aggregation of contiguous requests, with waits for larger aggregations.
 *
 * One queue per file (server, stream), sorted by type then offset: reads come
 * before writes, each in offset order. The unit a file offers is its head
 * request aggregated with the contiguous requests that follow it (same op,
 * up to max_aggregation bytes). Every file has a quantum that starts at 0
 * when it gets requests and grows by quantum_step at each scheduling step
 * (each pick); a file whose quantum covers its unit may be selected, and
 * among those the oldest unit goes first (FIFO across files). The selected
 * unit's bytes are taken from the quantum. When no quantum is enough yet,
 * the steps that would pass until one is are taken at once.
 *
 * Before dispatching a unit below max_aggregation, the file may wait (the
 * others go on being served), on the simulated clock, at most max_wait per
 * unit:
 *  1. shift phenomenon: the unit's contiguous successor is expected before
 *     the wait would end, from the mean delay observed on this file between
 *     a request and the arrival of its contiguous successor (a successor
 *     later than twice that delay is not waited for any more);
 *  2. the unit is smaller than the largest aggregation performed on the file
 *     (not once it is as large). A wait that ends by timeout resets that
 *     largest to what was dispatched, so the file moves on.
 * A file waits until its wait ends or a new request changes its unit.
 *
 * Each server keeps its files with requests in one of three indexed heaps:
 * waiting for quantum (by the step their quantum covers their unit), eligible
 * (by oldest request) and waiting for a larger unit (by the end of the wait).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "request_engine.h"

enum { P_QUANTUM_STEP, P_MAX_AGGREGATION, P_MAX_WAIT, N_PARAM };

/* AGIOS defaults: 64 KiB, 16 x 64 KiB, 900 us. */
static const re_param PARAMS[] = {
    [P_QUANTUM_STEP] = {"quantum_step", 65536.0, "bytes a file's quantum grows by at each scheduling step",
                        RE_ABOVE(0)},
    [P_MAX_AGGREGATION] = {"max_aggregation", 1048576.0, "largest aggregated unit, bytes", RE_ABOVE(0)},
    [P_MAX_WAIT] = {"max_wait", 0.0009, "seconds a file may wait for a larger aggregation", RE_AT_LEAST(0)},
};
_Static_assert(sizeof(PARAMS) / sizeof(PARAMS[0]) == N_PARAM, "one entry per parameter");
enum { NOWHERE = -1, QUANTUM = 0, ELIGIBLE = 1, WAITING = 2 };

typedef struct {
    double key;
    int64_t tie;
    int32_t file;
} hitem;

typedef struct {
    hitem *items; /* into the shared array, at the server's first file */
    int32_t size;
} fheap;

typedef struct {
    int64_t head[2], tail[2]; /* offset-sorted lists: reads, writes */
    int64_t count;            /* requests queued */
    int32_t server;
    int32_t where, pos;       /* heap and position in it */
    double quantum;           /* bytes, as of step `qstep` */
    uint64_t qstep;
    double largest;           /* bytes of the largest aggregation performed */
    double gap;               /* mean delay to a contiguous successor (s), < 0 unknown */
    double wait_start;        /* first wait for the current unit, < 0 none */
    /* the unit the file offers */
    int unit_op;
    int64_t unit_count, unit_end, unit_last;
    double unit_bytes, unit_oldest;
} file_state;

typedef struct {
    int64_t end;      /* end offset of a dispatched unit */
    int32_t file;     /* -1: empty slot */
    double arrival;   /* arrival of its last request */
} end_slot;

struct re_sched {
    const re_requests *rq;
    double step, max_aggregation, max_wait;
    int64_t limit;        /* requests per unit: the engine's buffer */
    int32_t *file;        /* [n] file of each request */
    int64_t *next, *prev; /* [n] links of the sorted lists */
    file_state *files;    /* [n_files] */
    hitem *items;         /* [3 * n_files] heap storage */
    fheap *heaps;         /* [3 * n_servers] */
    uint64_t *steps;      /* [n_servers] scheduling steps so far */
    end_slot *ends;       /* [n_ends] recent unit ends (direct-mapped cache) */
    uint64_t ends_mask;
};

static void aioli_destroy(re_sched *s)
{
    free(s->file);
    free(s->next);
    free(s->prev);
    free(s->files);
    free(s->items);
    free(s->heaps);
    free(s->steps);
    free(s->ends);
    free(s);
}

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
}

/* ---- indexed min-heaps of files, by (key, tie) ---- */

static int hless(const hitem *a, const hitem *b)
{
    return a->key < b->key || (a->key == b->key && a->tie < b->tie);
}

static void hset(re_sched *s, fheap *h, int32_t i, hitem item)
{
    h->items[i] = item;
    s->files[item.file].pos = i;
}

static void hsift(re_sched *s, fheap *h, int32_t i)
{
    hitem item = h->items[i];
    while (i > 0 && hless(&item, &h->items[(i - 1) / 2])) {
        hset(s, h, i, h->items[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    for (;;) {
        int32_t child = 2 * i + 1;
        if (child >= h->size)
            break;
        if (child + 1 < h->size && hless(&h->items[child + 1], &h->items[child]))
            child++;
        if (!hless(&h->items[child], &item))
            break;
        hset(s, h, i, h->items[child]);
        i = child;
    }
    hset(s, h, i, item);
}

static fheap *heap_of(re_sched *s, int32_t server, int which)
{
    return &s->heaps[(int64_t)server * 3 + which];
}

static void hpush(re_sched *s, int32_t f, int which, double key, int64_t tie)
{
    file_state *fs = &s->files[f];
    fheap *h = heap_of(s, fs->server, which);
    fs->where = which;
    h->items[h->size] = (hitem){key, tie, f};
    hsift(s, h, h->size++);
}

static void hremove(re_sched *s, int32_t f)
{
    file_state *fs = &s->files[f];
    if (fs->where == NOWHERE)
        return;
    fheap *h = heap_of(s, fs->server, fs->where);
    int32_t i = fs->pos;
    fs->where = NOWHERE;
    if (i != --h->size) {
        h->items[i] = h->items[h->size];
        hsift(s, h, i);
    }
}

/* ---- creation ---- */

/* Dense file ids of the (server, stream) pairs, by first appearance; returns the count or -1. */
static int32_t number_files(re_sched *s)
{
    const re_requests *rq = s->rq;
    uint64_t size = 2;
    while (size < 2 * (uint64_t)rq->n + 2)
        size <<= 1;
    int64_t *keys = malloc(size * sizeof(int64_t));
    int32_t *ids = malloc(size * sizeof(int32_t));
    if (keys == NULL || ids == NULL) {
        free(keys);
        free(ids);
        return -1;
    }
    for (uint64_t i = 0; i < size; i++)
        keys[i] = -1;
    int32_t n_files = 0;
    for (int64_t i = 0; i < rq->n; i++) {
        int64_t key = (int64_t)rq->server[i] * rq->n_streams + rq->stream[i];
        uint64_t h = mix((uint64_t)key) & (size - 1);
        while (keys[h] >= 0 && keys[h] != key)
            h = (h + 1) & (size - 1);
        if (keys[h] < 0) {
            keys[h] = key;
            ids[h] = n_files++;
        }
        s->file[i] = ids[h];
    }
    free(keys);
    free(ids);
    return n_files;
}

/* Gives each server's heaps room for its files. */
static int place_heaps(re_sched *s, int32_t n_files)
{
    int32_t ns = s->rq->n_servers;
    int64_t *count = calloc(at_least_one(ns), sizeof(int64_t));
    if (count == NULL)
        return 0;
    for (int32_t f = 0; f < n_files; f++)
        count[s->files[f].server]++;
    int64_t base = 0;
    for (int32_t sv = 0; sv < ns; sv++)
        for (int which = 0; which < 3; which++) {
            fheap *h = heap_of(s, sv, which);
            h->items = s->items + base;
            h->size = 0;
            base += count[sv];
        }
    free(count);
    return 1;
}

static re_sched *aioli_create(const re_context *ctx, int *rc, int64_t *bad)
{
    const re_requests *rq = ctx->rq;
    const double *p = ctx->param;
    re_sched *s = calloc(1, sizeof(re_sched));
    if (s == NULL) {
        *rc = RE_NOMEM;
        return NULL;
    }
    s->rq = rq;
    s->step = p[P_QUANTUM_STEP];
    s->max_aggregation = p[P_MAX_AGGREGATION];
    s->max_wait = p[P_MAX_WAIT];
    s->limit = INT64_MAX;
    uint64_t n_ends = 1024;
    while (n_ends < (uint64_t)rq->n && n_ends < (1u << 18))
        n_ends <<= 1;
    s->ends_mask = n_ends - 1;
    s->file = malloc(sizeof(int32_t) * at_least_one(rq->n));
    s->next = malloc(sizeof(int64_t) * at_least_one(rq->n));
    s->prev = malloc(sizeof(int64_t) * at_least_one(rq->n));
    s->heaps = calloc(at_least_one((int64_t)rq->n_servers * 3), sizeof(fheap));
    s->steps = calloc(at_least_one(rq->n_servers), sizeof(uint64_t));
    s->ends = malloc(sizeof(end_slot) * n_ends);
    int32_t n_files = s->file ? number_files(s) : -1;
    if (n_files >= 0) {
        s->files = calloc(at_least_one(n_files), sizeof(file_state));
        s->items = malloc(sizeof(hitem) * at_least_one(3 * (int64_t)n_files));
    }
    if (n_files < 0 || !s->next || !s->prev || !s->heaps || !s->steps || !s->ends || !s->files || !s->items) {
        aioli_destroy(s);
        *rc = RE_NOMEM;
        return NULL;
    }
    for (uint64_t i = 0; i < n_ends; i++)
        s->ends[i].file = -1;
    for (int64_t i = 0; i < rq->n; i++)
        s->files[s->file[i]].server = rq->server[i];
    for (int32_t f = 0; f < n_files; f++) {
        file_state *fs = &s->files[f];
        fs->head[0] = fs->head[1] = fs->tail[0] = fs->tail[1] = -1;
        fs->where = NOWHERE;
        fs->gap = -1;
        fs->wait_start = -1;
    }
    if (!place_heaps(s, n_files)) {
        aioli_destroy(s);
        *rc = RE_NOMEM;
        return NULL;
    }
    return s;
}

/* ---- units and waits ---- */

static end_slot *end_slot_of(re_sched *s, int32_t file, int64_t end)
{
    return &s->ends[mix((uint64_t)end * 31 + (uint64_t)file) & s->ends_mask];
}

/* The unit the file offers: its first request (reads first) and the contiguous ones after it. */
static void offer(re_sched *s, file_state *fs)
{
    const re_requests *rq = s->rq;
    int op = fs->head[0] >= 0 ? 0 : 1;
    int64_t req = fs->head[op];
    fs->unit_op = op;
    fs->unit_count = 1;
    fs->unit_bytes = rq->size[req];
    fs->unit_oldest = rq->arrival[req];
    fs->unit_end = request_end(rq, req);
    fs->unit_last = req;
    for (int64_t nx = s->next[req]; nx >= 0 && rq->offset[nx] == fs->unit_end; nx = s->next[nx]) {
        if (fs->unit_count >= s->limit || fs->unit_bytes + rq->size[nx] > s->max_aggregation)
            break;
        fs->unit_count++;
        fs->unit_bytes += rq->size[nx];
        fs->unit_end = request_end(rq, nx);
        fs->unit_last = nx;
        if (rq->arrival[nx] < fs->unit_oldest)
            fs->unit_oldest = rq->arrival[nx];
    }
}

/* Until when the file should wait for a larger unit, from `now`; <= now: no wait. */
static double wait_until(const re_sched *s, const file_state *fs, double now)
{
    if (s->max_wait <= 0 || fs->unit_bytes >= s->max_aggregation || fs->unit_count >= s->limit)
        return now;
    double deadline = (fs->wait_start >= 0 ? fs->wait_start : now) + s->max_wait;
    if (fs->unit_bytes < fs->largest)
        return deadline;
    if (fs->gap < 0)
        return now;
    double expected = s->rq->arrival[fs->unit_last] + fs->gap;
    if (expected > deadline)
        return now; /* beyond the budget: not worth waiting */
    return fmin(deadline, expected + fs->gap);
}

/* Puts the file in the right heap of its server after its queue or its wait changed. */
static void place(re_sched *s, int32_t f, double now)
{
    file_state *fs = &s->files[f];
    hremove(s, f);
    if (fs->count == 0)
        return;
    offer(s, fs);
    double until = fs->wait_start >= 0 ? wait_until(s, fs, now) : now;
    if (until > now) {
        hpush(s, f, WAITING, until, f);
        return;
    }
    uint64_t steps = s->steps[fs->server];
    fs->quantum += (double)(steps - fs->qstep) * s->step;
    fs->qstep = steps;
    if (fs->quantum >= fs->unit_bytes) {
        hpush(s, f, ELIGIBLE, fs->unit_oldest, fs->head[fs->unit_op]);
    } else {
        double need = ceil((fs->unit_bytes - fs->quantum) / s->step);
        hpush(s, f, QUANTUM, (double)steps + (need < 1 ? 1 : need), f);
    }
}

/* Learns the delay between a request and its contiguous successor `req`. */
static void learn_gap(re_sched *s, file_state *fs, int32_t f, int64_t pred, int64_t req)
{
    const re_requests *rq = s->rq;
    double sample = -1;
    if (pred >= 0 && request_end(rq, pred) == rq->offset[req]) {
        sample = rq->arrival[req] - rq->arrival[pred];
    } else {
        end_slot *slot = end_slot_of(s, f, rq->offset[req]);
        if (slot->file == f && slot->end == rq->offset[req])
            sample = rq->arrival[req] - slot->arrival;
    }
    if (sample >= 0)
        fs->gap = fs->gap < 0 ? sample : 0.75 * fs->gap + 0.25 * sample;
}

static void aioli_enqueue(re_sched *s, int32_t server, int64_t req, double now)
{
    const re_requests *rq = s->rq;
    int32_t f = s->file[req];
    file_state *fs = &s->files[f];
    int op = rq->op[req] ? 1 : 0;
    /* offset order, arrival order among equal offsets; arrivals mostly go last */
    int64_t pred = fs->tail[op];
    while (pred >= 0 && rq->offset[pred] > rq->offset[req])
        pred = s->prev[pred];
    int64_t succ = pred >= 0 ? s->next[pred] : fs->head[op];
    s->prev[req] = pred;
    s->next[req] = succ;
    if (pred >= 0)
        s->next[pred] = req;
    else
        fs->head[op] = req;
    if (succ >= 0)
        s->prev[succ] = req;
    else
        fs->tail[op] = req;
    learn_gap(s, fs, f, pred, req);
    if (fs->count++ == 0) { /* its quantum starts at 0 */
        fs->quantum = 0;
        fs->qstep = s->steps[server];
    } else if (op != 0 && fs->unit_op == 0) {
        return; /* a write behind the reads: the unit stays */
    } else if (op == fs->unit_op && pred >= 0 && pred != fs->unit_last &&
               rq->offset[req] >= fs->unit_end) {
        return; /* lands after the unit without extending it */
    }
    place(s, f, now);
}

/* Sends the file's unit: its requests leave the queue, its bytes the quantum. */
static int64_t dispatch(re_sched *s, int32_t f, double now, int64_t *out)
{
    file_state *fs = &s->files[f];
    int op = fs->unit_op;
    for (int64_t j = 0; j < fs->unit_count; j++) {
        int64_t req = fs->head[op];
        out[j] = req;
        fs->head[op] = s->next[req];
    }
    if (fs->head[op] >= 0)
        s->prev[fs->head[op]] = -1;
    else
        fs->tail[op] = -1;
    fs->count -= fs->unit_count;
    uint64_t steps = s->steps[fs->server];
    fs->quantum += (double)(steps - fs->qstep) * s->step;
    fs->qstep = steps;
    fs->quantum = fs->quantum > fs->unit_bytes ? fs->quantum - fs->unit_bytes : 0;
    int timed_out = fs->wait_start >= 0 && now >= fs->wait_start + s->max_wait;
    if (timed_out || fs->unit_bytes > fs->largest)
        fs->largest = fs->unit_bytes;
    fs->wait_start = -1;
    end_slot *slot = end_slot_of(s, f, fs->unit_end);
    slot->file = f;
    slot->end = fs->unit_end;
    slot->arrival = s->rq->arrival[fs->unit_last];
    int64_t count = fs->unit_count;
    place(s, f, now);
    return count;
}

static int64_t aioli_pick(re_sched *s, int32_t server, double now, int64_t *out, int64_t max, double *wake)
{
    fheap *quantum = heap_of(s, server, QUANTUM), *eligible = heap_of(s, server, ELIGIBLE);
    fheap *waiting = heap_of(s, server, WAITING);
    if (quantum->size + eligible->size + waiting->size == 0)
        return 0;
    uint64_t *steps = &s->steps[server];
    ++*steps;
    while (waiting->size && waiting->items[0].key <= now) /* waits over */
        place(s, waiting->items[0].file, now);
    for (;;) {
        while (quantum->size && quantum->items[0].key <= (double)*steps)
            place(s, quantum->items[0].file, now);
        if (eligible->size) {
            int32_t f = eligible->items[0].file;
            file_state *fs = &s->files[f];
            if (fs->wait_start < 0 && wait_until(s, fs, now) > now) {
                fs->wait_start = now; /* the others go on while it waits */
                place(s, f, now);
                continue;
            }
            if (fs->unit_count > max) { /* learns the engine's buffer */
                s->limit = max;
                offer(s, fs);
            }
            return dispatch(s, f, now, out);
        }
        if (quantum->size == 0)
            break;
        *steps = (uint64_t)quantum->items[0].key; /* the steps until a quantum is enough */
    }
    if (waiting->size)
        *wake = waiting->items[0].key;
    return 0;
}

static void aioli_complete(re_sched *s, int32_t server, const int64_t *reqs, int64_t count, double dispatched,
                           double started, double now)
{
}

const re_sched_ops sched_aioli = {
    .name = "aioli", .params = PARAMS, .n_params = N_PARAM, .create = aioli_create, .destroy = aioli_destroy,
    .enqueue = aioli_enqueue, .pick = aioli_pick, .complete = aioli_complete,
};
