/* Request-level replay engine (docs/explanation/models.md, "The request model").
 *
 * Requests arrive at their dates, go through one scheduler per run into the
 * device of their server (a storage target). A unit (a single or aggregated
 * request) costs overhead + bytes / bandwidth, plus seek when it does not
 * continue the previous unit of the server on the same stream; in fixed-IOPS
 * mode every unit costs 1 / iops instead. A server serves its units in
 * dispatch order with `concurrency` service slots: the k-th unit starts at
 * slot = max(dispatch, end of unit k - concurrency) and ends at
 * max(slot + cost, end of unit k - 1 + bytes / bandwidth) (+ cost in
 * fixed-IOPS mode): overheads and seeks of up to `concurrency` units overlap,
 * their bytes go through the bandwidth one unit after the other, and units
 * complete in dispatch order. A server always accepts `concurrency` units; the
 * scheduler may keep up to max(queue_depth, concurrency) outstanding.
 *
 * With rate > 0 a server is rate-limited by a token bucket of `burst` bytes,
 * full at the start and refilled at `rate` bytes/s: a unit of b bytes given its
 * slot at s takes tokens = min(burst, tokens + rate * (s - refilled)) at s; if
 * tokens >= b it starts at s and tokens -= b, else it starts at
 * s' = s + (b - tokens) / rate once its tokens are in, with tokens = 0 and
 * refilled = s'. It then ends at max(s' + cost, end of unit k - 1 + transfer).
 * A unit given its slot before the previous one's start (concurrency > 1) finds
 * the bucket in debt (tokens < 0): it starts b / rate after that start. The
 * bucket counts bytes in fixed-IOPS mode too; rate 0 is no bucket.
 *
 * With slice > 0 (and rate > 0) the bucket is quantised as Linux's blk-throttle
 * grants it (burst unused): a slice opens at s when the unit finds the server
 * idle (s > the last unit's start + slice), with nothing charged; by the k-th
 * slice of it (s - slice_start in ((k - 1) slice, k slice], k >= 1) the server
 * may have started k x rate x slice bytes. A unit that would exceed that by x
 * bytes starts at slice_start + k slice + x / rate (not before the previous
 * unit's start), else at s. Once it starts at s', the slices before the one of
 * s' but one are trimmed: n = floor((s' - slice_start) / slice), if n >= 2 the
 * charge drops by (n - 1) x rate x slice (not below 0) and slice_start moves
 * on by n - 1 slices. The budget thus comes at slice boundaries.
 */
#ifndef IOSETS_REQUEST_ENGINE_H
#define IOSETS_REQUEST_ENGINE_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "interrupt.h"

enum {
    RE_OK = 0,
    RE_NOMEM = 1,
    RE_BAD_ARRIVAL = 2,   /* index = request: dates must be finite and sorted */
    RE_BAD_SIZE = 3,      /* index = request */
    RE_BAD_ID = 4,        /* index = request: class, stream, server or phase out of range */
    RE_BAD_DEVICE = 5,
    RE_BAD_WEIGHT = 6,    /* index = class */
    RE_BAD_RESERVATION = 7, /* index = class */
    RE_BAD_LIMIT = 8,     /* index = class */
    RE_BAD_PARAM = 9,     /* index = the parameter's entry in the scheduler's params */
    RE_INTERRUPTED = 10,  /* the hook asked to stop */
    RE_OVERFLOW = 11,     /* index = requests never completed: their dates overflow */
    RE_BAD_GATE = 12,     /* index = request: closed loop, its phase, gate or think time */
    RE_BAD_CHAIN = 13,    /* index = phase: closed loop, its prev, gap, job, or no request */
    RE_BAD_RATE = 14,     /* index = job: closed loop, its client_rate */
};

#define RE_MAX_CONCURRENCY 65536 /* service slots of a server; the engine keeps that many ends per server */

typedef struct {
    int64_t n;
    const double *arrival;  /* [n] sorted, s */
    const double *size;     /* [n] bytes, in [0, 2^63) */
    const int64_t *offset;  /* [n] bytes */
    const int32_t *cls;     /* [n] class (set, job, client...) in [0, n_classes) */
    const int32_t *stream;  /* [n] file or device stream in [0, n_streams) */
    const int32_t *server;  /* [n] server in [0, n_servers) */
    const int32_t *phase;   /* [n] dense I/O phase id in [0, n_phases), or -1 */
    const int8_t *op;       /* [n] 0 read, 1 write */
    int32_t n_classes, n_streams, n_servers, n_phases;
} re_requests;

typedef struct {
    int32_t queue_depth; /* units outstanding at a server at once beyond its concurrency (>= 1) */
    double bandwidth;    /* bytes/s of a server */
    double overhead;     /* s per unit */
    double seek;         /* s when a unit does not continue the previous one */
    double iops;         /* > 0: fixed-IOPS mode, every unit costs 1 / iops */
    int32_t concurrency; /* units a server serves at once, in [1, RE_MAX_CONCURRENCY] */
    double rate;         /* bytes/s a server moves on average (its token bucket's refill); 0 = no limit */
    double burst;        /* bytes its bucket holds (what it moves at full bandwidth after idling) */
    double slice;        /* s > 0: the budget rate x slice comes per slice (blk-throttle); 0 = continuous bucket */
} re_device;

typedef struct {
    const re_requests *rq;
    const re_device *device;
    const double *weight;       /* [n_classes] */
    const double *reservation;  /* [n_classes] */
    const double *limit;        /* [n_classes], 0 = none */
    const double *param;        /* [n_params] scheduler scalars, in the order of its params */
    interrupt_hook interrupt;   /* asked about every INTERRUPT_EVERY turns, servers tried and requests queued */
} re_context;

/* One scalar parameter of a scheduler, declared next to the scheduler (sched_*.c).
 * A value must be finite, within [min, max] (above min when min_open) and, when
 * integer, a whole number; every entry states its range with one of the macros below. */
typedef struct {
    const char *name;
    double default_value;
    const char *doc;
    double min, max;
    int min_open;
    int integer;
} re_param;

/* The allowed ranges, as designated initializers following a re_param's name, default and doc. */
#define RE_ABOVE(lo) .min = (lo), .max = INFINITY, .min_open = 1
#define RE_AT_LEAST(lo) .min = (lo), .max = INFINITY
#define RE_INTEGER(lo, hi) .min = (lo), .max = (hi), .integer = 1
#define RE_FLAG RE_INTEGER(0, 1)
#define RE_ANY .min = -INFINITY, .max = INFINITY

typedef struct re_sched re_sched;

/* One scheduler: the engine calls enqueue on arrival, pick whenever a device
 * has room, complete when a unit is done. */
typedef struct {
    const char *name;
    const re_param *params; /* the scalars it reads from re_context.param, in that order */
    int32_t n_params;
    int unbounded_depth; /* 1: dispatch ignores queue_depth (NOOP) */
    /* 1: pick on a server none of whose requests is queued returns 0 and sets no wake, and not
     * calling it then changes nothing; the engine skips those picks (two in three, one after
     * each dispatch and one after each completion). */
    int idle_when_empty;
    /* Builds the state; returns NULL with *rc and *bad set on error. */
    re_sched *(*create)(const re_context *ctx, int *rc, int64_t *bad);
    void (*destroy)(re_sched *s);
    void (*enqueue)(re_sched *s, int32_t server, int64_t req, double now);
    /* Writes up to `max` requests of one unit to `out` and returns how many;
     * 0 when nothing may go now, with *wake the earliest date something might
     * (left at INFINITY when only an arrival or a completion can help);
     * -1 when the scheduler ran out of memory. */
    int64_t (*pick)(re_sched *s, int32_t server, double now, int64_t *out, int64_t max, double *wake);
    /* A unit of `count` requests ends: dispatched at `dispatched`, served from `started` (its slot, or
     * later once its tokens are in) to `now`. */
    void (*complete)(re_sched *s, int32_t server, const int64_t *reqs, int64_t count, double dispatched,
                     double started, double now);
    /* NULL, or for a scheduler whose completion on one server may let others dispatch (iosets-wfq's
     * set exclusivity): names the servers where work was queued, since the last call, other than by an
     * arrival at its own server (each once, in any order): *servers points at them, valid until the next
     * call into the scheduler; returns their count and starts a new list. The engine calls it after the
     * completions and arrivals of every date that had a completion, and tries those servers too. */
    int32_t (*unblocked)(re_sched *s, const int32_t **servers);
} re_sched_ops;

typedef struct {
    double *dispatch;  /* [n] */
    double *complete;  /* [n] */
    int64_t *unit;     /* [n] id of the unit the request was served in */
    double *served;    /* [n] or NULL: the date its unit started: its service slot, or later for its tokens */
    int64_t n_units;
} re_output;

/* The registry (sched_registry.c). */
int32_t re_n_schedulers(void);
const re_sched_ops *re_scheduler_at(int32_t i);
const re_sched_ops *re_find_scheduler(const char *name);

/* Index of the first of the scheduler's parameters whose value is not allowed, or -1. */
int32_t re_check_params(const re_sched_ops *ops, const double *param);

/* What a parameter allows, e.g. "> 0", "0 or 1", "an integer in [1, 1000000]". */
void re_param_rule(const re_param *p, char *buf, size_t size);

/* "rbfq: idle_credit must be >= 0, got -1". */
void re_param_error(const re_sched_ops *ops, int32_t index, double value, char *buf, size_t size);

/* Where a request ends: offset + size, wrapping past INT64_MAX instead of overflowing
 * (such an end continues no request, which is all the engines ask of it). */
static inline int64_t request_end(const re_requests *rq, int64_t req)
{
    return (int64_t)((uint64_t)rq->offset[req] + (uint64_t)rq->size[req]);
}

/* Asks the cache for what the engine and the schedulers read of request `req` when it arrives
 * and is sent: the closed loop calls it a think time ahead, at the release, so that these reads
 * hit the cache instead of missing on every array (the jobs move through the requests out of
 * step with their recorded order, too many streams for the hardware prefetcher). */
static inline void prefetch_request(const re_requests *rq, int64_t req)
{
    __builtin_prefetch(&rq->server[req]);
    __builtin_prefetch(&rq->cls[req]);
    __builtin_prefetch(&rq->phase[req]);
    __builtin_prefetch(&rq->size[req]);
    __builtin_prefetch(&rq->offset[req]);
    __builtin_prefetch(&rq->stream[req]);
}

/* An allocation count of at least one item (malloc(0) may return NULL). */
static inline size_t at_least_one(int64_t n)
{
    return (size_t)(n > 0 ? n : 1);
}

/* What releases each request in the closed loop (re_run_closed). Every request belongs
 * to a chain phase (re_requests.phase, never -1). A phase opens at the end of its prev
 * phase + gap (at gap itself, a date, when prev = -1) and ends when its last request
 * completes; a request is released at the completion of its gate (at its phase's
 * opening when gate = -1) + think.
 *
 * With `first`, the engine's requests are parts of recorded requests (a request split
 * over storage targets): the parts of one request share its phase, gate and think, are
 * released together, and what the request gates is released when its last part
 * completes; gates point at first parts. With `client_rate`, the parts of job j leave
 * its client link one after the other: a part due at t goes at
 * s = max(t, the link's next free date), which then moves to s + bytes / client_rate[j]. */
typedef struct {
    const int64_t *gate;  /* [n] -1 or the first part of an earlier request of the same phase */
    const double *think;  /* [n] s, finite, >= 0 */
    const int32_t *prev;  /* [n_phases] -1 or an earlier phase of the same job */
    const double *gap;    /* [n_phases] finite; >= 0 when prev >= 0 */
    const int32_t *job;   /* [n_phases] job label of each phase; in [0, n_jobs) with client_rate */
    const int64_t *first; /* [n] or NULL: the first part of each part's request, first[first[i]] = first[i] <= i */
    const double *client_rate; /* [n_jobs] or NULL: bytes/s of each job's client link, 0 = none */
    int32_t n_jobs;       /* of client_rate */
} re_chains;

/* Replays the requests; returns RE_OK or an error code with its index in *bad_index
 * (the outputs are complete only with RE_OK). */
int re_run(const re_sched_ops *ops, const re_context *ctx, re_output *out, int64_t *bad_index);

/* Replays the requests in a closed loop: ctx->rq->arrival is ignored, each request's
 * release date goes to arrival_out[n] (what the schedulers read as its arrival) and each
 * phase's opening and end to phase_start_out and phase_end_out[n_phases] (NaN when never
 * reached). Pending releases live in a heap whose size follows the outstanding requests. */
int re_run_closed(const re_sched_ops *ops, const re_context *ctx, const re_chains *ch, re_output *out,
                  double *arrival_out, double *phase_start_out, double *phase_end_out, int64_t *bad_index);

#endif
