/* Huge-page backed allocations: see big_alloc.h. */
#define _DEFAULT_SOURCE /* madvise, posix_memalign under -std=c11 */
#include "big_alloc.h"

#include <stdlib.h>
#include <sys/mman.h>

#define HUGE_PAGE ((size_t)2 << 20) /* x86-64 and arm64 transparent huge pages */

void *big_alloc(size_t bytes)
{
    bytes = bytes > 0 ? bytes : 1;
#ifdef MADV_HUGEPAGE
    if (bytes >= 2 * HUGE_PAGE) { /* smaller arrays would waste most of a huge page */
        size_t rounded = (bytes + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
        void *p = NULL;
        if (posix_memalign(&p, HUGE_PAGE, rounded) != 0)
            return NULL;
        madvise(p, rounded, MADV_HUGEPAGE); /* advice only: without huge pages, plain pages serve */
        return p;
    }
#endif
    return malloc(bytes);
}
