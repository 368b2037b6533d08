/* FIFO queues of request ids linked through one shared `next` array. */
#ifndef IOSETS_SCHED_QUEUE_H
#define IOSETS_SCHED_QUEUE_H

#include <stdint.h>
#include <stdlib.h>

typedef struct {
    int64_t head, tail;
} req_queue;

static inline void rq_init(req_queue *q, int64_t count)
{
    for (int64_t i = 0; i < count; i++)
        q[i].head = q[i].tail = -1;
}

static inline void rq_push(req_queue *q, int64_t *next, int64_t req)
{
    next[req] = -1;
    if (q->tail < 0)
        q->head = req;
    else
        next[q->tail] = req;
    q->tail = req;
}

static inline int64_t rq_pop(req_queue *q, const int64_t *next)
{
    int64_t req = q->head;
    q->head = next[req];
    if (q->head < 0)
        q->tail = -1;
    return req;
}

#endif
