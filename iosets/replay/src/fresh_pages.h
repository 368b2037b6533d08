/* The outputs an engine fills in one call are fresh memory: each first touch is a page fault
 * in which the kernel clears a page. Transparent huge pages (numpy asks for them on large
 * arrays) make that cost a lottery on the virtual machines this runs on, which hand free
 * memory back to their host: a fresh 2 MB page is either cheap or costs about 2 ms, while
 * 4 kB pages cost a steady ~0.4 ms per MB. A 10 M-request closed-loop replay writes ~800 MB:
 * its call's system time went from 0.3-1.3 s to 0.2-0.45 s. Where huge pages are always warm
 * this costs ~0.25 ms per MB more. */
#ifndef IOSETS_FRESH_PAGES_H
#define IOSETS_FRESH_PAGES_H

#include <stddef.h>

/* Advises the kernel to back the whole pages inside buf[0, bytes) with small pages (advice
 * only, the contents are untouched; nothing when buf is NULL or the system lacks the advice). */
void prefer_small_pages(void *buf, size_t bytes);

#endif
