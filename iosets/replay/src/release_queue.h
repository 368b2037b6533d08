/* The closed loop's pending releases (request_engine.h, re_chains): which requests
 * each completion releases, when each phase opens and ends. Used by re_run_closed. */
#ifndef IOSETS_RELEASE_QUEUE_H
#define IOSETS_RELEASE_QUEUE_H

#include <stdint.h>

#include "request_engine.h"

typedef struct release_queue release_queue;

/* Checks the chains, builds the reverse links and opens every job's first phase;
 * returns NULL with *rc (RE_BAD_GATE, RE_BAD_CHAIN, RE_BAD_RATE, RE_NOMEM) and *bad on error.
 * `release`, `phase_start` and `phase_end` are the outputs, filled as the loop runs. */
release_queue *rl_new(const re_requests *rq, const re_chains *ch, double *release, double *phase_start,
                      double *phase_end, int *rc, int64_t *bad);

void rl_free(release_queue *q);

/* Date of the earliest pending release, INFINITY when none is pending. */
double rl_next(const release_queue *q);

/* The next request released by `now` (removed from the pending releases), or -1. A
 * request of a job with a client link that is busy until s > now is put back at s. */
int64_t rl_take(release_queue *q, double now);

/* Request (part) `req` completes at `now`: releases what its request gates when it was
 * the request's last part, and ends its phase (opening the next ones) when it was the
 * phase's last; returns 0 when out of memory. */
int rl_complete(release_queue *q, int64_t req, double now);

#endif
