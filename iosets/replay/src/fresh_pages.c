/* Small pages for fresh outputs: see fresh_pages.h. */
#define _DEFAULT_SOURCE /* madvise under -std=c11 */
#include "fresh_pages.h"

#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

void prefer_small_pages(void *buf, size_t bytes)
{
#ifdef MADV_NOHUGEPAGE
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t start = ((uintptr_t)buf + page - 1) & ~(page - 1), end = ((uintptr_t)buf + bytes) & ~(page - 1);
    if (buf != NULL && end > start)
        madvise((void *)start, end - start, MADV_NOHUGEPAGE);
#else
    (void)buf;
    (void)bytes;
#endif
}
