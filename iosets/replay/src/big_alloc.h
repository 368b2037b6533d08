/* Large arrays an engine allocates once and fills: backed by transparent huge pages where the
 * system offers them, so that a fresh gigabyte costs hundreds of page faults instead of a
 * quarter of a million (a closed-loop replay of 10 M requests touches about 1 GB). */
#ifndef IOSETS_BIG_ALLOC_H
#define IOSETS_BIG_ALLOC_H

#include <stddef.h>

/* `bytes` (at least one) of uninitialised memory, released with free(); NULL when out of memory. */
void *big_alloc(size_t bytes);

#endif
