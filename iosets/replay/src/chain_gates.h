/* The closed loop's gates (re_chains.gate) from a recorded trace, in two passes over
 * the requests and memory that follows the groups and the requests in flight. */
#ifndef IOSETS_CHAIN_GATES_H
#define IOSETS_CHAIN_GATES_H

#include <stdint.h>

/* Requests in recorded start order (start sorted), each in a group (a rank of a phase)
 * in [0, n_groups), occupying [start, end) with end >= start (one ending as another
 * starts does not overlap it; one of zero length counts at its date). A group's depth is
 * the largest number of its requests in flight at once, at least 1; gate[i] is the
 * request of i's group `depth` requests before i, or -1. Returns RE_OK or RE_NOMEM. */
int chain_gates(int64_t n, const int32_t *group, int32_t n_groups, const double *start, const double *end,
                int64_t *gate);

#endif
