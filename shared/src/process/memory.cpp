#include "platoon/process/memory.hpp"

#include <cstdlib>  // defines __GLIBC__ where the C library is glibc

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace platoon::process {

bool KeepLargeAllocations() {
#if defined(__GLIBC__)
  // 32 MiB is the largest mmap threshold glibc accepts on 64-bit systems (half its arena heap size).
  const bool mmap_ok = mallopt(M_MMAP_THRESHOLD, 32 << 20) == 1;
  const bool trim_ok = mallopt(M_TRIM_THRESHOLD, 512 << 20) == 1;
  return mmap_ok && trim_ok;
#else
  return false;
#endif
}

}  // namespace platoon::process
