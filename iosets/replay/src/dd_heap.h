/* Binary min-heap of (double-double key, id) pairs; ties on key pop the smaller
 * id first. The phase engine's heaps (the template and the plain double heap are in heap.h). */
#ifndef IOSETS_DD_HEAP_H
#define IOSETS_DD_HEAP_H

#include "ddouble.h"
#include "heap.h"

#define IOSETS_DD_EQUAL(a, b) ((a).hi == (b).hi && (a).lo == (b).lo)
IOSETS_DEFINE_HEAP(dd_heap, dd, dd_less, IOSETS_DD_EQUAL)

#endif
