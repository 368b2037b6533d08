/* Binary min-heaps of (key, id) pairs; ties on key pop the smaller id first.
 * Plain C, no Python: shared by the replay engines. IOSETS_DEFINE_HEAP writes one
 * heap type and its functions for a key type, given how two keys compare:
 * `heap` (double keys) is defined here, `dd_heap` (double-double) in dd_heap.h. */
#ifndef IOSETS_HEAP_H
#define IOSETS_HEAP_H

#include <stdint.h>
#include <stdlib.h>

#define IOSETS_DEFINE_HEAP(name, key_t, KEY_LESS, KEY_EQUAL)                                   \
    typedef struct {                                                                           \
        key_t key;                                                                             \
        int32_t id;                                                                            \
    } name##_item;                                                                             \
                                                                                               \
    typedef struct {                                                                           \
        name##_item *items;                                                                    \
        int64_t size;                                                                          \
        int64_t capacity;                                                                      \
    } name;                                                                                    \
                                                                                               \
    static inline int name##_less(const name##_item *a, const name##_item *b)                  \
    {                                                                                          \
        return KEY_LESS(a->key, b->key) || (KEY_EQUAL(a->key, b->key) && a->id < b->id);       \
    }                                                                                          \
                                                                                               \
    static inline int name##_init(name *h, int64_t capacity)                                   \
    {                                                                                          \
        h->size = 0;                                                                           \
        h->capacity = capacity > 0 ? capacity : 1;                                             \
        h->items = malloc((size_t)h->capacity * sizeof(name##_item));                          \
        return h->items != NULL;                                                               \
    }                                                                                          \
                                                                                               \
    static inline void name##_free(name *h)                                                    \
    {                                                                                          \
        free(h->items);                                                                        \
        h->items = NULL;                                                                       \
    }                                                                                          \
                                                                                               \
    /* Doubles the capacity when the heap is full; 0 when out of memory. */                    \
    static inline int name##_make_room(name *h)                                                \
    {                                                                                          \
        if (h->size < h->capacity)                                                             \
            return 1;                                                                          \
        name##_item *items = realloc(h->items, (size_t)(2 * h->capacity) * sizeof(name##_item)); \
        if (items == NULL)                                                                     \
            return 0;                                                                          \
        h->items = items;                                                                      \
        h->capacity *= 2;                                                                      \
        return 1;                                                                              \
    }                                                                                          \
                                                                                               \
    /* The caller guarantees size < capacity (a bound, or make_room). */                       \
    static inline void name##_push(name *h, key_t key, int32_t id)                             \
    {                                                                                          \
        int64_t i = h->size++;                                                                 \
        name##_item item = {key, id};                                                          \
        while (i > 0) {                                                                        \
            int64_t parent = (i - 1) / 2;                                                      \
            if (!name##_less(&item, &h->items[parent]))                                        \
                break;                                                                         \
            h->items[i] = h->items[parent];                                                    \
            i = parent;                                                                        \
        }                                                                                      \
        h->items[i] = item;                                                                    \
    }                                                                                          \
                                                                                               \
    /* Puts `item` at the top's place and sifts it down (the heap has size items). */          \
    static inline void name##_sift_down(name *h, name##_item item)                             \
    {                                                                                          \
        int64_t i = 0, n = h->size;                                                            \
        for (;;) {                                                                             \
            int64_t child = 2 * i + 1;                                                         \
            if (child >= n)                                                                    \
                break;                                                                         \
            if (child + 1 < n && name##_less(&h->items[child + 1], &h->items[child]))          \
                child++;                                                                       \
            if (!name##_less(&h->items[child], &item))                                         \
                break;                                                                         \
            h->items[i] = h->items[child];                                                     \
            i = child;                                                                         \
        }                                                                                      \
        h->items[i] = item;                                                                    \
    }                                                                                          \
                                                                                               \
    /* Replaces the top item (there is one) by (key, id): a pop and a push in one sift. */     \
    static inline void name##_replace_top(name *h, key_t key, int32_t id)                      \
    {                                                                                          \
        name##_item item = {key, id};                                                          \
        name##_sift_down(h, item);                                                             \
    }                                                                                          \
                                                                                               \
    static inline name##_item name##_pop(name *h)                                              \
    {                                                                                          \
        name##_item top = h->items[0];                                                         \
        name##_item last = h->items[--h->size];                                                \
        if (h->size > 0)                                                                       \
            name##_sift_down(h, last);                                                         \
        return top;                                                                            \
    }

#define IOSETS_DOUBLE_LESS(a, b) ((a) < (b))
#define IOSETS_DOUBLE_EQUAL(a, b) ((a) == (b))
IOSETS_DEFINE_HEAP(heap, double, IOSETS_DOUBLE_LESS, IOSETS_DOUBLE_EQUAL)

#endif
