// process::KeepLargeAllocations (shared/src/process/memory.cpp): large freed blocks stay in the heap.
#include "platoon/process/memory.hpp"

#include <doctest/doctest.h>

#include <cstdlib>  // defines __GLIBC__ where the C library is glibc
#include <cstring>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

// Sanitizers bring their own malloc, on which mallopt has no effect: there is no glibc heap to look at.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define PLATOON_TEST_OWN_MALLOC 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define PLATOON_TEST_OWN_MALLOC 1
#endif
#endif

TEST_CASE("process: KeepLargeAllocations serves an 8 MB block from the heap and keeps it there once freed") {
#if defined(PLATOON_TEST_OWN_MALLOC)
  MESSAGE("a sanitizer's allocator replaces glibc's here: nothing to check");
  (void)platoon::process::KeepLargeAllocations();
#elif defined(__GLIBC__) && __GLIBC_PREREQ(2, 33)  // mallinfo2
  REQUIRE(platoon::process::KeepLargeAllocations());
  // By default glibc maps a block this size afresh (above its 128 kB initial mmap threshold) and unmaps
  // it on free, so the next one is touched page by page again.
  const size_t n = size_t{8} << 20;
  const struct mallinfo2 before = mallinfo2();
  auto* block = static_cast<char*>(std::malloc(n));
  REQUIRE(block != nullptr);
  std::memset(block, 1, n);
  const struct mallinfo2 during = mallinfo2();
  CHECK(during.hblkhd == before.hblkhd);  // not a mapping of its own: from the heap
  std::free(block);
  const struct mallinfo2 after = mallinfo2();
  CHECK(after.arena == during.arena);  // the heap was not trimmed
  CHECK(after.fordblks >= n);          // the block is kept as free heap for the next one
  // The next block of that size reuses it: the heap does not grow.
  auto* again = static_cast<char*>(std::malloc(n));
  REQUIRE(again != nullptr);
  CHECK(mallinfo2().arena == during.arena);
  CHECK(mallinfo2().hblkhd == before.hblkhd);
  std::free(again);
#elif !defined(__GLIBC__)
  CHECK_FALSE(platoon::process::KeepLargeAllocations());
#endif
}
