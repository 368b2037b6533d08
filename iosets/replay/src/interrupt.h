/* Cooperative interruption of the engines' long loops (plain C, no Python).
 *
 * The caller passes a hook; an engine counts its units of work (event dates,
 * requests queued, servers tried) on a counter that only grows, and once per
 * turn of its main loop asks the hook whether to stop if the count passed a
 * multiple of INTERRUPT_EVERY (the Python glue checks for signals there). An
 * engine that stops frees its memory and returns its *_INTERRUPTED code. */
#ifndef IOSETS_INTERRUPT_H
#define IOSETS_INTERRUPT_H

#include <stddef.h>
#include <stdint.h>

/* 64 k units: a few ms of work at the engines' speed. */
#define INTERRUPT_EVERY 65536

typedef struct {
    int (*interrupted)(void *arg); /* nonzero: stop now; NULL: never stop */
    void *arg;
} interrupt_hook;

/* Whether a work counter (>= 0) that grew from `before` to `after` passed a multiple
 * of INTERRUPT_EVERY (a power of 2: the bits above it changed) and the hook then
 * asks to stop. */
static inline int interrupt_due(const interrupt_hook *hook, int64_t before, int64_t after)
{
    if ((uint64_t)(before ^ after) < INTERRUPT_EVERY)
        return 0;
    return hook->interrupted != NULL && hook->interrupted(hook->arg);
}

#endif
