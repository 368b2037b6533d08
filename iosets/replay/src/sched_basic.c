/* Baselines: fcfs (NOOP, requests go to the device as they arrive) and
 * time-order (AGIOS TO: one FIFO by arrival, the device depth respected). */
#include <math.h>
#include <stdlib.h>

#include "request_engine.h"
#include "sched_queue.h"

struct re_sched {
    req_ring *queue; /* [n_servers] */
    int32_t n_servers;
    int failed;      /* out of memory in enqueue */
};

static re_sched *fifo_create(const re_context *ctx, int *rc, int64_t *bad)
{
    re_sched *s = calloc(1, sizeof(re_sched));
    int32_t ns = ctx->rq->n_servers;
    if (s != NULL)
        s->queue = calloc((size_t)(ns > 0 ? ns : 1), sizeof(req_ring));
    if (s == NULL || s->queue == NULL) {
        free(s);
        *rc = RE_NOMEM;
        return NULL;
    }
    s->n_servers = ns;
    return s;
}

static void fifo_destroy(re_sched *s)
{
    for (int32_t i = 0; i < s->n_servers; i++)
        ring_free(&s->queue[i]);
    free(s->queue);
    free(s);
}

static void fifo_enqueue(re_sched *s, int32_t server, int64_t req, double now)
{
    if (!ring_push(&s->queue[server], req))
        s->failed = 1;
}

static int64_t fifo_pick(re_sched *s, int32_t server, double now, int64_t *out, int64_t max, double *wake)
{
    if (s->failed)
        return -1;
    if (s->queue[server].count == 0)
        return 0;
    out[0] = ring_pop(&s->queue[server]);
    return 1;
}

static void fifo_complete(re_sched *s, int32_t server, const int64_t *reqs, int64_t count, double dispatched,
                          double started, double now)
{
}

const re_sched_ops sched_fcfs = {
    .name = "fcfs", .unbounded_depth = 1, .idle_when_empty = 1, .create = fifo_create, .destroy = fifo_destroy,
    .enqueue = fifo_enqueue, .pick = fifo_pick, .complete = fifo_complete,
};

const re_sched_ops sched_time_order = {
    .name = "time-order", .idle_when_empty = 1, .create = fifo_create, .destroy = fifo_destroy,
    .enqueue = fifo_enqueue, .pick = fifo_pick, .complete = fifo_complete,
};
