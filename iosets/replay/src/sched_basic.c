/* Baselines: fcfs (NOOP, requests go to the device as they arrive) and
 * time-order (AGIOS TO: one FIFO by arrival, the device depth respected). */
#include <math.h>
#include <stdlib.h>

#include "request_engine.h"
#include "sched_queue.h"

struct re_sched {
    int64_t *next;
    req_queue *queue; /* [n_servers] */
};

static re_sched *fifo_create(const re_context *ctx, int *rc, int64_t *bad)
{
    re_sched *s = calloc(1, sizeof(re_sched));
    int32_t ns = ctx->rq->n_servers;
    if (s != NULL) {
        s->next = malloc(sizeof(int64_t) * (size_t)(ctx->rq->n > 0 ? ctx->rq->n : 1));
        s->queue = malloc(sizeof(req_queue) * (size_t)(ns > 0 ? ns : 1));
    }
    if (s == NULL || s->next == NULL || s->queue == NULL) {
        if (s != NULL) {
            free(s->next);
            free(s->queue);
            free(s);
        }
        *rc = RE_NOMEM;
        return NULL;
    }
    rq_init(s->queue, ns);
    return s;
}

static void fifo_destroy(re_sched *s)
{
    free(s->next);
    free(s->queue);
    free(s);
}

static void fifo_enqueue(re_sched *s, int32_t server, int64_t req, double now)
{
    rq_push(&s->queue[server], s->next, req);
}

static int64_t fifo_pick(re_sched *s, int32_t server, double now, int64_t *out, int64_t max, double *wake)
{
    if (s->queue[server].head < 0)
        return 0;
    out[0] = rq_pop(&s->queue[server], s->next);
    return 1;
}

static void fifo_complete(re_sched *s, int32_t server, const int64_t *reqs, int64_t count, double dispatched,
                          double started, double now)
{
}

const re_sched_ops sched_fcfs = {
    "fcfs", 1, 0, fifo_create, fifo_destroy, fifo_enqueue, fifo_pick, fifo_complete,
};

const re_sched_ops sched_time_order = {
    "time-order", 0, 0, fifo_create, fifo_destroy, fifo_enqueue, fifo_pick, fifo_complete,
};
