/* Binary min-heap of (double-double key, id) pairs; ties on key pop the smaller
 * id first. The phase engine's heaps (heap.h holds the plain double one). */
#ifndef IOSETS_DD_HEAP_H
#define IOSETS_DD_HEAP_H

#include <stdint.h>
#include <stdlib.h>

#include "ddouble.h"

typedef struct {
    dd key;
    int32_t id;
} dd_heap_item;

typedef struct {
    dd_heap_item *items;
    int64_t size;
} dd_heap;

static inline int dd_heap_less(const dd_heap_item *a, const dd_heap_item *b)
{
    if (a->key.hi != b->key.hi)
        return a->key.hi < b->key.hi;
    return a->key.lo < b->key.lo || (a->key.lo == b->key.lo && a->id < b->id);
}

static inline int dd_heap_init(dd_heap *h, int64_t capacity)
{
    h->size = 0;
    h->items = malloc((size_t)(capacity > 0 ? capacity : 1) * sizeof(dd_heap_item));
    return h->items != NULL;
}

static inline void dd_heap_free(dd_heap *h)
{
    free(h->items);
    h->items = NULL;
}

/* The caller guarantees room (the engine bounds its heaps by the job count). */
static inline void dd_heap_push(dd_heap *h, dd key, int32_t id)
{
    int64_t i = h->size++;
    dd_heap_item item = {key, id};
    while (i > 0) {
        int64_t parent = (i - 1) / 2;
        if (!dd_heap_less(&item, &h->items[parent]))
            break;
        h->items[i] = h->items[parent];
        i = parent;
    }
    h->items[i] = item;
}

static inline dd_heap_item dd_heap_pop(dd_heap *h)
{
    dd_heap_item top = h->items[0];
    dd_heap_item last = h->items[--h->size];
    int64_t i = 0, n = h->size;
    for (;;) {
        int64_t child = 2 * i + 1;
        if (child >= n)
            break;
        if (child + 1 < n && dd_heap_less(&h->items[child + 1], &h->items[child]))
            child++;
        if (!dd_heap_less(&h->items[child], &last))
            break;
        h->items[i] = h->items[child];
        i = child;
    }
    if (n > 0)
        h->items[i] = last;
    return top;
}

#endif
