#include "util/freed_memory.h"

#include <cstdlib>  // defines __GLIBC__ where the C library is glibc

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace memplan {

void return_large_blocks_when_freed() {
#if defined(__GLIBC__)
  // Setting the threshold at all turns its dynamic adjustment off (mallopt(3)).
  static const bool once = mallopt(M_MMAP_THRESHOLD, 128 * 1024) == 1;
  (void)once;
#endif
}

void return_free_heap_pages() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

}  // namespace memplan
