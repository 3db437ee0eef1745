#pragma once
/// The C library's allocator tuned for processes that pass messages of megabytes: lidar clouds (3-5 MB),
/// fused frames (13 MB), camera images and world keyframes.

namespace platoon::process {

/// Keeps large blocks in the process once they are freed, instead of returning them to the kernel after
/// every message. By default glibc serves a block of more than a few MB from a fresh mapping and hands
/// it back on free (or trims the heap top), so every new cloud is first touched page by page: on a 2-core
/// VM, packing and encoding a 4.6 MB HDL-64E cloud took 9.4-10.6 ms that way, as long as the 9.5-10 ms
/// scan itself, and 1.3-1.8 ms with this (docs/BENCHMARKS.md, "Lidar ray casting"). With this, blocks up
/// to 32 MiB come from the heap and up to 512 MiB of free heap is kept, so a process's memory stays at
/// its peak rather than rising and falling with every message. Call it first in main(), before other
/// threads start. Returns false where the C library is not glibc (no effect).
bool KeepLargeAllocations();

}  // namespace platoon::process
