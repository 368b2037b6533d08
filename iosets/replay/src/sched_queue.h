/* FIFO queues of request ids: linked through one shared `next` array (req_queue),
 * or growable rings whose memory follows the queue's length (req_ring). */
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

typedef struct {
    int64_t *items;
    int64_t head, count, capacity;
} req_ring;

static inline void ring_free(req_ring *r)
{
    free(r->items);
    r->items = NULL;
}

/* Appends `req`; returns 0 when out of memory. */
static inline int ring_push(req_ring *r, int64_t req)
{
    if (r->count == r->capacity) {
        int64_t grown = r->capacity ? 2 * r->capacity : 16;
        int64_t *items = malloc((size_t)grown * sizeof(int64_t));
        if (items == NULL)
            return 0;
        for (int64_t i = 0; i < r->count; i++)
            items[i] = r->items[(r->head + i) % r->capacity];
        free(r->items);
        r->items = items;
        r->head = 0;
        r->capacity = grown;
    }
    int64_t tail = r->head + r->count;
    r->items[tail >= r->capacity ? tail - r->capacity : tail] = req;
    r->count++;
    return 1;
}

static inline int64_t ring_peek(const req_ring *r)
{
    return r->count ? r->items[r->head] : -1;
}

static inline int64_t ring_pop(req_ring *r)
{
    int64_t req = r->items[r->head];
    r->head = r->head + 1 == r->capacity ? 0 : r->head + 1;
    r->count--;
    return req;
}

#endif
