// process::KeepLargeAllocations (shared/src/process/memory.cpp): large freed blocks stay in the heap.
#include "platoon/process/memory.hpp"

#include <doctest/doctest.h>

#include <cstdlib>  // defines __GLIBC__ where the C library is glibc
#include <cstring>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

TEST_CASE("process: KeepLargeAllocations serves an 8 MB block from the heap and keeps it there once freed") {
#if defined(__GLIBC__)
  REQUIRE(platoon::process::KeepLargeAllocations());
  // By default glibc maps a block this size afresh (above its 128 kB initial mmap threshold) and unmaps
  // it on free, so the next one is touched page by page again.
  const size_t n = size_t{8} << 20;
  const struct mallinfo2 before = mallinfo2();
  auto* block = static_cast<char*>(std::malloc(n));
  REQUIRE(block != nullptr);
  std::memset(block, 1, n);
  const struct mallinfo2 during = mallinfo2();
  CHECK(during.hblkhd == before.hblkhd);  // not a mapping of its own
  CHECK(during.arena >= before.arena + n - (n / 8));  // the heap holds it (allowing for free space it had)
  std::free(block);
  const struct mallinfo2 after = mallinfo2();
  CHECK(after.arena == during.arena);  // not trimmed
  CHECK(after.fordblks >= n);          // kept as free heap for the next block
  // The next block of that size reuses it: the heap does not grow.
  auto* again = static_cast<char*>(std::malloc(n));
  REQUIRE(again != nullptr);
  CHECK(mallinfo2().arena == during.arena);
  std::free(again);
#else
  CHECK_FALSE(platoon::process::KeepLargeAllocations());
#endif
}
