/* The closed loop's gates: see chain_gates.h. */
#include "chain_gates.h"

#include <stdlib.h>

#include "heap.h"
#include "request_engine.h"

/* Each group's depth: a sweep in start order, the requests in flight in two heaps of
 * (end, group), one for those of positive length (gone at a start >= their end) and one
 * for those of zero length (gone at a start > their end). */
static int depths(int64_t n, const int32_t *group, const double *start, const double *end, int32_t *level,
                  int64_t *depth)
{
    heap ends, points;
    int ok = heap_init(&ends, 64) & heap_init(&points, 64);
    for (int64_t i = 0; ok && i < n; i++) {
        while (ends.size && ends.items[0].key <= start[i])
            level[heap_pop(&ends).id]--;
        while (points.size && points.items[0].key < start[i])
            level[heap_pop(&points).id]--;
        int32_t g = group[i];
        if (++level[g] > depth[g])
            depth[g] = level[g];
        heap *in_flight = end[i] > start[i] ? &ends : &points;
        ok = heap_make_room(in_flight);
        if (ok)
            heap_push(in_flight, end[i], g);
    }
    heap_free(&ends);
    heap_free(&points);
    return ok;
}

int chain_gates(int64_t n, const int32_t *group, int32_t n_groups, const double *start, const double *end,
                int64_t *gate)
{
    int32_t *level = calloc(at_least_one(n_groups), sizeof(int32_t));
    int64_t *depth = calloc(at_least_one(n_groups), sizeof(int64_t));
    int64_t *seen = calloc(at_least_one(n_groups), sizeof(int64_t));
    int64_t *first = malloc(at_least_one(n_groups) * sizeof(int64_t)); /* of the group's ring */
    int64_t *ring = NULL; /* per group, its last `depth` requests */
    int ok = level && depth && seen && first && depths(n, group, start, end, level, depth);
    int64_t total = 0;
    for (int32_t g = 0; ok && g < n_groups; g++) {
        depth[g] = depth[g] > 1 ? depth[g] : 1;
        first[g] = total;
        total += depth[g];
    }
    if (ok)
        ring = malloc(at_least_one(total) * sizeof(int64_t));
    ok = ok && ring != NULL;
    for (int64_t i = 0; ok && i < n; i++) {
        int32_t g = group[i];
        int64_t k = seen[g]++, slot = first[g] + k % depth[g];
        gate[i] = k >= depth[g] ? ring[slot] : -1;
        ring[slot] = i;
    }
    free(level);
    free(depth);
    free(seen);
    free(first);
    free(ring);
    return ok ? RE_OK : RE_NOMEM;
}
