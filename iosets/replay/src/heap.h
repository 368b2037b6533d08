/* Binary min-heap of (key, id) pairs; ties on key pop the smaller id first.
 * Plain C, no Python: shared by the replay engines. */
#ifndef IOSETS_HEAP_H
#define IOSETS_HEAP_H

#include <stdint.h>
#include <stdlib.h>

typedef struct {
    double key;
    int32_t id;
} heap_item;

typedef struct {
    heap_item *items;
    int64_t size;
    int64_t capacity;
} heap;

static inline int heap_less(const heap_item *a, const heap_item *b)
{
    return a->key < b->key || (a->key == b->key && a->id < b->id);
}

static inline int heap_init(heap *h, int64_t capacity)
{
    h->size = 0;
    h->capacity = capacity > 0 ? capacity : 1;
    h->items = malloc((size_t)h->capacity * sizeof(heap_item));
    return h->items != NULL;
}

static inline void heap_free(heap *h)
{
    free(h->items);
    h->items = NULL;
}

/* The caller guarantees size < capacity (every engine bounds its heaps). */
static inline void heap_push(heap *h, double key, int32_t id)
{
    int64_t i = h->size++;
    heap_item item = {key, id};
    while (i > 0) {
        int64_t parent = (i - 1) / 2;
        if (!heap_less(&item, &h->items[parent]))
            break;
        h->items[i] = h->items[parent];
        i = parent;
    }
    h->items[i] = item;
}

static inline heap_item heap_pop(heap *h)
{
    heap_item top = h->items[0];
    heap_item last = h->items[--h->size];
    int64_t i = 0, n = h->size;
    for (;;) {
        int64_t child = 2 * i + 1;
        if (child >= n)
            break;
        if (child + 1 < n && heap_less(&h->items[child + 1], &h->items[child]))
            child++;
        if (!heap_less(&h->items[child], &last))
            break;
        h->items[i] = h->items[child];
        i = child;
    }
    if (n > 0)
        h->items[i] = last;
    return top;
}

#endif
