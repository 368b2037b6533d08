/* Request-level engine loop: see request_engine.h for the model. */
#include "request_engine.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fresh_pages.h"
#include "heap.h"
#include "release_queue.h"

#define MAX_UNIT 4096 /* largest aggregation a scheduler may form */

/* A dispatched unit in the device; slots are recycled once the unit completes,
 * so the engine's memory follows the outstanding units, not the trace. */
typedef struct {
    int64_t first;      /* first member request */
    int64_t count;
    int64_t *members;   /* all the members when count > 1; kept with the slot, grown as needed */
    int64_t capacity;   /* of members */
    int64_t next;       /* next outstanding slot of the same server, or the next free slot */
    double dispatched;
    double start;       /* its service slot, or later once its tokens are in */
    double end;         /* completion */
} unit_slot;

typedef struct {
    unit_slot *slots;
    int64_t n_slots, free_slot;
    int64_t *head, *tail;   /* [n_servers] outstanding slots */
    int32_t *outstanding;   /* [n_servers] */
    int64_t *queued;        /* [n_servers] requests enqueued and not yet dispatched */
    double *busy_until;     /* [n_servers] completion of the last dispatched unit */
    double *ends;           /* [n_servers x concurrency] per server, a ring of its last units' completions */
    int32_t *ring_pos;      /* [n_servers] the ring's entry of the unit dispatched `concurrency` units ago */
    int32_t concurrency;
    double *tokens;         /* [n_servers] bytes in the server's bucket at `refilled` (< 0: owed) */
    double *refilled;       /* [n_servers] also the last unit's start, after its tokens */
    double *charged;        /* [n_servers] slice mode: bytes started since slice_start (after trims) */
    double *slice_start;    /* [n_servers] slice mode */
    int32_t *last_stream;   /* [n_servers] */
    int64_t *last_end;      /* [n_servers] end offset of the last dispatched unit */
    int32_t *dirty;         /* servers that may dispatch now */
    char *is_dirty;
    int32_t n_dirty;
    heap done;              /* (completion of the head unit, server) */
    heap wake;              /* (scheduler wake-up date, server), grown as needed */
    int64_t n_completed;    /* requests */
    int64_t buffer[MAX_UNIT];
} engine_state;

/* Checks the device and the requests; the arrival dates only when `sorted_arrival`. */
static int validate(const re_requests *rq, const re_device *dev, int sorted_arrival, int64_t *bad)
{
    if (!(dev->queue_depth >= 1) || !(dev->bandwidth > 0) || !isfinite(dev->bandwidth) ||
        !(dev->overhead >= 0) || !isfinite(dev->overhead) || !(dev->seek >= 0) || !isfinite(dev->seek) ||
        !(dev->iops >= 0) || !isfinite(dev->iops) || dev->concurrency < 1 || dev->concurrency > RE_MAX_CONCURRENCY ||
        !(dev->rate >= 0) || !isfinite(dev->rate) || !(dev->burst >= 0) || !isfinite(dev->burst) ||
        !(dev->slice >= 0) || !isfinite(dev->slice))
        return RE_BAD_DEVICE;
    double previous = -INFINITY;
    for (int64_t i = 0; i < rq->n; i++) {
        *bad = i;
        if (sorted_arrival) {
            if (!isfinite(rq->arrival[i]) || rq->arrival[i] < previous)
                return RE_BAD_ARRIVAL;
            previous = rq->arrival[i];
        }
        if (!(rq->size[i] >= 0) || !(rq->size[i] < 0x1p63))
            return RE_BAD_SIZE;
        if (rq->cls[i] < 0 || rq->cls[i] >= rq->n_classes || rq->stream[i] < 0 ||
            rq->stream[i] >= rq->n_streams || rq->server[i] < 0 || rq->server[i] >= rq->n_servers ||
            rq->phase[i] < -1 || rq->phase[i] >= rq->n_phases)
            return RE_BAD_ID;
    }
    *bad = -1;
    return RE_OK;
}

static void mark_dirty(engine_state *e, int32_t server)
{
    if (!e->is_dirty[server]) {
        e->is_dirty[server] = 1;
        e->dirty[e->n_dirty++] = server;
    }
}

static int compare_servers(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* After the completions of a date, a cross-server scheduler's work may now go at servers that neither
 * completed nor had an arrival: marks the ones it names, then puts the dirty servers after the
 * `n_completing` completing ones in ascending order. Waking every server gave that order, and a server
 * it woke in vain dispatched nothing, so the units and their ids are the same. */
static void mark_unblocked(const re_sched_ops *ops, re_sched *s, engine_state *e, int32_t n_completing)
{
    const int32_t *servers;
    int32_t n = ops->unblocked(s, &servers);
    for (int32_t i = 0; i < n; i++)
        mark_dirty(e, servers[i]);
    int32_t *rest = e->dirty + n_completing, n_rest = e->n_dirty - n_completing;
    int32_t i = 1;
    while (i < n_rest && rest[i - 1] < rest[i])
        i++;
    if (i < n_rest)
        qsort(rest, (size_t)n_rest, sizeof(int32_t), compare_servers);
}

/* The unit's cost (overhead + transfer + seek when it does not continue the server's
 * previous unit), in *transfer the time its bytes hold the server's bandwidth and in
 * *bytes its bytes. */
static double unit_cost(const re_context *ctx, engine_state *e, int32_t server, const int64_t *reqs, int64_t k,
                        double *transfer, double *bytes)
{
    const re_requests *rq = ctx->rq;
    const re_device *dev = ctx->device;
    int64_t first = reqs[0], last = reqs[k - 1];
    int contiguous = rq->stream[first] == e->last_stream[server] && rq->offset[first] == e->last_end[server];
    e->last_stream[server] = rq->stream[last];
    e->last_end[server] = request_end(rq, last);
    *bytes = rq->size[first];
    for (int64_t j = 1; j < k; j++)
        *bytes += rq->size[reqs[j]];
    if (dev->iops > 0)
        return *transfer = 1.0 / dev->iops;
    *transfer = *bytes / dev->bandwidth;
    return dev->overhead + *transfer + (contiguous ? 0.0 : dev->seek);
}

/* Slice mode (request_engine.h): when a unit of `bytes` given its slot at `slot` on `server`
 * starts, at once if its slice's budget holds it, else once a later slice's budget does. */
static double slice_grant(const re_device *dev, engine_state *e, int32_t server, double slot, double bytes)
{
    double previous = e->refilled[server], budget = dev->rate * dev->slice;
    if (slot > previous + dev->slice) { /* idle for a slice, nothing waiting: a new slice */
        e->slice_start[server] = slot;
        e->charged[server] = 0.0;
    }
    double opened = e->slice_start[server], charged = e->charged[server] + bytes;
    double slices = ceil((slot - opened) / dev->slice);
    slices = slices > 1.0 ? slices : 1.0;
    double start = slot;
    if (charged > slices * budget)
        start = opened + slices * dev->slice + (charged - slices * budget) / dev->rate;
    start = start > previous ? start : previous;
    double trimmed = floor((start - opened) / dev->slice) - 1.0;
    if (trimmed >= 1.0 && charged > 0.0) {
        charged -= trimmed * budget;
        charged = charged > 0.0 ? charged : 0.0;
        e->slice_start[server] = opened + trimmed * dev->slice;
    }
    e->charged[server] = charged;
    e->refilled[server] = start;
    return start;
}

/* When a unit of `bytes` given its slot at `slot` on `server` starts: at once if the server's
 * bucket holds its tokens, else once the missing ones have come in at the device's rate. */
static double bucket_start(const re_device *dev, engine_state *e, int32_t server, double slot, double bytes)
{
    if (dev->slice > 0)
        return slice_grant(dev, e, server, slot, bytes);
    double tokens = e->tokens[server] + dev->rate * (slot - e->refilled[server]);
    tokens = tokens < dev->burst ? tokens : dev->burst;
    if (tokens >= bytes) {
        e->tokens[server] = tokens - bytes;
        e->refilled[server] = slot;
        return slot;
    }
    double start = slot + (bytes - tokens) / dev->rate;
    e->tokens[server] = 0.0;
    e->refilled[server] = start;
    return start;
}

/* Gives the unit a service slot on `server` at `now` and returns its start (the slot, or later
 * once its tokens are in); *end is its completion. With concurrency 1 and no bucket the slot is
 * max(now, busy_until) and slot + cost >= busy_until + transfer (rounding is monotone), so the
 * end is the one-at-a-time model's, bit for bit. */
static double serve(const re_context *ctx, engine_state *e, int32_t server, const int64_t *reqs, int64_t k,
                    double now, double *end)
{
    double *ring = e->ends + (size_t)server * (size_t)e->concurrency;
    int32_t pos = e->ring_pos[server];
    double slot = ring[pos] > now ? ring[pos] : now; /* the unit `concurrency` earlier has freed its slot */
    double transfer, bytes, cost = unit_cost(ctx, e, server, reqs, k, &transfer, &bytes);
    if (ctx->device->rate > 0)
        slot = bucket_start(ctx->device, e, server, slot, bytes);
    double done = slot + cost, streamed = e->busy_until[server] + transfer;
    *end = e->busy_until[server] = ring[pos] = done > streamed ? done : streamed;
    e->ring_pos[server] = pos + 1 == e->concurrency ? 0 : pos + 1;
    return slot;
}

/* A free unit slot, growing the pool when all are in use; -1 when out of memory. */
static int64_t take_slot(engine_state *e)
{
    if (e->free_slot < 0) {
        int64_t grown = e->n_slots * 2;
        unit_slot *slots = realloc(e->slots, (size_t)grown * sizeof(unit_slot));
        if (slots == NULL)
            return -1;
        for (int64_t i = e->n_slots; i < grown; i++)
            slots[i] = (unit_slot){.next = i + 1 < grown ? i + 1 : -1};
        e->slots = slots;
        e->free_slot = e->n_slots;
        e->n_slots = grown;
    }
    int64_t slot = e->free_slot;
    e->free_slot = e->slots[slot].next;
    return slot;
}

/* Dispatches units to `server` while its device has room and the scheduler has work. */
static int dispatch(const re_sched_ops *ops, re_sched *s, const re_context *ctx, engine_state *e,
                    re_output *out, int32_t server, double now)
{
    while (ops->unbounded_depth || e->outstanding[server] < ctx->device->queue_depth) {
        if (ops->idle_when_empty && e->queued[server] == 0)
            return RE_OK;
        double wake = INFINITY;
        int64_t k = ops->pick(s, server, now, e->buffer, MAX_UNIT, &wake);
        if (k < 0)
            return RE_NOMEM;
        if (k == 0) {
            if (wake < INFINITY) {
                if (!heap_make_room(&e->wake))
                    return RE_NOMEM;
                heap_push(&e->wake, wake > now ? wake : now, server);
            }
            return RE_OK;
        }
        int64_t slot = take_slot(e);
        if (slot < 0)
            return RE_NOMEM;
        unit_slot *u = &e->slots[slot];
        if (k > u->capacity) { /* members kept only for aggregated units */
            int64_t *members = realloc(u->members, (size_t)k * sizeof(int64_t));
            if (members == NULL)
                return RE_NOMEM;
            u->members = members;
            u->capacity = k;
        }
        if (k > 1)
            memcpy(u->members, e->buffer, (size_t)k * sizeof(int64_t));
        int64_t id = out->n_units++;
        u->start = serve(ctx, e, server, e->buffer, k, now, &u->end);
        for (int64_t j = 0; j < k; j++) {
            out->dispatch[e->buffer[j]] = now;
            out->unit[e->buffer[j]] = id;
        }
        if (out->served != NULL)
            for (int64_t j = 0; j < k; j++)
                out->served[e->buffer[j]] = u->start;
        u->first = e->buffer[0];
        u->count = k;
        u->dispatched = now;
        u->next = -1;
        if (e->tail[server] < 0) {
            e->head[server] = slot;
            heap_push(&e->done, u->end, server);
        } else {
            e->slots[e->tail[server]].next = slot;
        }
        e->tail[server] = slot;
        e->outstanding[server]++;
        e->queued[server] -= k;
    }
    return RE_OK;
}

/* Completes the head unit of the server atop `done`, whose entry gives way to its next unit's
 * completion, if any; the unit's requests are left in e->buffer, their count returned. */
static int64_t complete_head(const re_sched_ops *ops, re_sched *s, engine_state *e, re_output *out, double now)
{
    int32_t server = e->done.items[0].id;
    int64_t slot = e->head[server];
    unit_slot u = e->slots[slot];
    e->head[server] = u.next;
    if (u.next < 0) {
        e->tail[server] = -1;
        heap_pop(&e->done);
    } else { /* (key, server) is a strict order, a server having one entry: any sift gives the same pops */
        heap_replace_top(&e->done, e->slots[u.next].end, server);
    }
    e->slots[slot].next = e->free_slot;
    e->free_slot = slot;
    e->outstanding[server]--;
    e->n_completed += u.count;
    for (int64_t j = 0; j < u.count; j++) {
        int64_t req = u.count > 1 ? u.members[j] : u.first;
        out->complete[req] = now;
        e->buffer[j] = req;
    }
    ops->complete(s, server, e->buffer, u.count, u.dispatched, u.start, now);
    mark_dirty(e, server);
    return u.count;
}

static void state_free(engine_state *e)
{
    for (int64_t i = 0; e->slots != NULL && i < e->n_slots; i++)
        free(e->slots[i].members);
    free(e->slots);
    free(e->head);
    free(e->tail);
    free(e->outstanding);
    free(e->queued);
    free(e->busy_until);
    free(e->ends);
    free(e->ring_pos);
    free(e->tokens);
    free(e->refilled);
    free(e->charged);
    free(e->slice_start);
    free(e->last_stream);
    free(e->last_end);
    free(e->dirty);
    free(e->is_dirty);
    heap_free(&e->done);
    heap_free(&e->wake);
    free(e);
}

static engine_state *state_new(const re_requests *rq, const re_device *dev)
{
    engine_state *e = calloc(1, sizeof(engine_state));
    if (e == NULL)
        return NULL;
    size_t ns = (size_t)(rq->n_servers > 0 ? rq->n_servers : 1);
    e->n_slots = 64;
    e->slots = calloc((size_t)e->n_slots, sizeof(unit_slot));
    e->head = malloc(ns * sizeof(int64_t));
    e->tail = malloc(ns * sizeof(int64_t));
    e->outstanding = calloc(ns, sizeof(int32_t));
    e->queued = calloc(ns, sizeof(int64_t));
    e->busy_until = calloc(ns, sizeof(double));
    e->concurrency = dev->concurrency; /* the ring starts at 0, as busy_until: no unit is served before 0 */
    e->ends = calloc(ns * (size_t)dev->concurrency, sizeof(double));
    e->ring_pos = calloc(ns, sizeof(int32_t));
    e->tokens = malloc(ns * sizeof(double));
    e->refilled = malloc(ns * sizeof(double));
    e->charged = calloc(ns, sizeof(double));
    e->slice_start = calloc(ns, sizeof(double));
    e->last_stream = malloc(ns * sizeof(int32_t));
    e->last_end = malloc(ns * sizeof(int64_t));
    e->dirty = malloc(ns * sizeof(int32_t));
    e->is_dirty = calloc(ns, 1);
    /* every server has at most one entry in `done`; `wake` grows with the pending wake-ups */
    int ok = heap_init(&e->done, (int64_t)ns) && heap_init(&e->wake, (int64_t)ns);
    if (!ok || !e->slots || !e->head || !e->tail || !e->outstanding || !e->queued || !e->busy_until || !e->ends ||
        !e->ring_pos || !e->tokens || !e->refilled || !e->charged || !e->slice_start || !e->last_stream ||
        !e->last_end || !e->dirty || !e->is_dirty) {
        state_free(e);
        return NULL;
    }
    for (int64_t i = 0; i < e->n_slots; i++)
        e->slots[i].next = i + 1 < e->n_slots ? i + 1 : -1;
    e->free_slot = 0;
    for (size_t s = 0; s < ns; s++) {
        e->head[s] = e->tail[s] = -1;
        e->last_stream[s] = -1;
        e->last_end[s] = -1;
        e->tokens[s] = dev->burst; /* a full bucket, whatever the date of the first slot */
        e->refilled[s] = -INFINITY;
    }
    return e;
}

/* Asks the cache for the request's outputs, written when it is sent and when it completes. */
static inline void prefetch_outputs(const re_output *out, int64_t req)
{
    __builtin_prefetch(&out->dispatch[req], 1);
    __builtin_prefetch(&out->complete[req], 1);
    __builtin_prefetch(&out->unit[req], 1);
    if (out->served != NULL)
        __builtin_prefetch(&out->served[req], 1);
}

/* The next request to enqueue at `now`, or -1: from the pending releases in the closed
 * loop (rl), else the next arrival date in order. */
static int64_t take_arrival(release_queue *rl, const re_requests *rq, int64_t next, double now)
{
    if (rl != NULL)
        return rl_take(rl, now);
    return next < rq->n && rq->arrival[next] <= now ? next : -1;
}

/* The engine loop, open (rl NULL: requests arrive at their dates) or closed. */
static int run(const re_sched_ops *ops, const re_context *ctx, release_queue *rl, re_output *out,
               int64_t *bad_index)
{
    const re_requests *rq = ctx->rq;
    int rc = RE_OK;
    *bad_index = re_check_params(ops, ctx->param);
    if (*bad_index >= 0)
        return RE_BAD_PARAM;
    re_sched *s = ops->create(ctx, &rc, bad_index);
    if (s == NULL)
        return rc;
    engine_state *e = state_new(rq, ctx->device);
    if (e == NULL) {
        ops->destroy(s);
        return RE_NOMEM;
    }
    out->n_units = 0;
    /* for the interrupt hook, once per turn (the batch of one date is not split): the work
     * done so far, counted as turns, servers tried and requests queued (each request is
     * sent and done once at most) */
    int64_t next = 0, tries = 0, work = 0;
    for (;;) {
        double t_arrival = rl != NULL ? rl_next(rl) : next < rq->n ? rq->arrival[next] : INFINITY;
        double t_done = e->done.size ? e->done.items[0].key : INFINITY;
        double t_wake = e->wake.size ? e->wake.items[0].key : INFINITY;
        double now = t_arrival < t_done ? t_arrival : t_done;
        now = t_wake < now ? t_wake : now;
        if (!(now < INFINITY))
            break; /* nothing left, or dates overflowed (checked below) */
        int completed = 0;
        while (e->done.size && e->done.items[0].key <= now && rc == RE_OK) {
            int64_t count = complete_head(ops, s, e, out, now);
            for (int64_t j = 0; rl != NULL && j < count && rc == RE_OK; j++)
                if (!rl_complete(rl, e->buffer[j], now))
                    rc = RE_NOMEM;
            completed = 1;
        }
        if (rc != RE_OK)
            break;
        int32_t n_completing = e->n_dirty;
        for (int64_t req; (req = take_arrival(rl, rq, next, now)) >= 0; next++) {
            prefetch_outputs(out, req);
            ops->enqueue(s, rq->server[req], req, now);
            e->queued[rq->server[req]]++;
            mark_dirty(e, rq->server[req]);
        }
        while (e->wake.size && e->wake.items[0].key <= now)
            mark_dirty(e, heap_pop(&e->wake).id);
        if (completed && ops->unblocked != NULL)
            mark_unblocked(ops, s, e, n_completing);
        int64_t before = work;
        tries += 1 + e->n_dirty;
        work = tries + next;
        if (interrupt_due(&ctx->interrupt, before, work)) {
            rc = RE_INTERRUPTED;
            break;
        }
        for (int32_t i = 0; i < e->n_dirty && rc == RE_OK; i++) {
            int32_t server = e->dirty[i];
            e->is_dirty[server] = 0;
            rc = dispatch(ops, s, ctx, e, out, server, now);
        }
        e->n_dirty = 0;
        if (rc != RE_OK)
            break;
    }
    if (rc == RE_OK && e->n_completed < rq->n) { /* their completion dates overflowed */
        *bad_index = rq->n - e->n_completed;
        rc = RE_OVERFLOW;
    }
    state_free(e);
    ops->destroy(s);
    return rc;
}

/* The device the schedulers and the dispatch see: a server always accepts `concurrency`
 * units, queue_depth is the scheduler's window beyond that. */
static re_device accepting(const re_device *dev)
{
    re_device seen = *dev;
    if (seen.queue_depth < seen.concurrency)
        seen.queue_depth = seen.concurrency;
    return seen;
}

/* Small pages for the outputs written in the call (fresh_pages.h). */
static void prefer_small_output_pages(const re_output *out, int64_t n, double *arrival_out)
{
    size_t bytes = (size_t)n * sizeof(double);
    prefer_small_pages(out->dispatch, bytes);
    prefer_small_pages(out->complete, bytes);
    prefer_small_pages(out->unit, (size_t)n * sizeof(int64_t));
    prefer_small_pages(out->served, bytes);
    prefer_small_pages(arrival_out, bytes);
}

int re_run(const re_sched_ops *ops, const re_context *ctx, re_output *out, int64_t *bad_index)
{
    *bad_index = -1;
    int rc = validate(ctx->rq, ctx->device, 1, bad_index);
    if (rc != RE_OK)
        return rc;
    re_device dev = accepting(ctx->device);
    re_context open = *ctx;
    open.device = &dev;
    prefer_small_output_pages(out, ctx->rq->n, NULL);
    return run(ops, &open, NULL, out, bad_index);
}

int re_run_closed(const re_sched_ops *ops, const re_context *ctx, const re_chains *ch, re_output *out,
                  double *arrival_out, double *phase_start_out, double *phase_end_out, int64_t *bad_index)
{
    *bad_index = -1;
    re_requests rq = *ctx->rq; /* the schedulers read the release dates as the arrivals */
    rq.arrival = arrival_out;
    re_device dev = accepting(ctx->device);
    re_context closed = *ctx;
    closed.rq = &rq;
    closed.device = &dev;
    int rc = validate(&rq, ctx->device, 0, bad_index);
    if (rc != RE_OK)
        return rc;
    prefer_small_output_pages(out, rq.n, arrival_out);
    release_queue *rl = rl_new(&rq, ch, arrival_out, phase_start_out, phase_end_out, &rc, bad_index);
    if (rl == NULL)
        return rc;
    rc = run(ops, &closed, rl, out, bad_index);
    rl_free(rl);
    return rc;
}
