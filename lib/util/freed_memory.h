// Freed memory goes back to the system. glibc raises its mmap threshold to the size of each large
// block freed (up to 32 MiB), so after the first weight is released every block below that size
// comes from the heap, whose freed pages stay resident: the model's weights, released one by one
// as their kernels take reordered copies, then counted in the process's peak beside those copies
// (ResNet-50: 153 MB peak with a saved plan, 171 MB without, for a floor of 107 MB + 24 MB of
// runtime; 130 MB for both with the threshold held).
#pragma once

namespace memplan {

// Holds glibc's mmap threshold at its default (128 KiB): every larger block is mapped on its own
// and unmapped when freed. Idempotent; a no-op where the C library is not glibc. Inference
// allocates nothing, so only compiling and loading pay a fault per large block.
void return_large_blocks_when_freed();

// Hands the heap's free pages back to the system. What a compile freed (the model's protobuf,
// oneDNN's descriptions of kernels not chosen, one-off reorders, a whole trial compilation) lies
// in holes between what stays; glibc returns only the heap's top by itself, so the holes would
// stay resident through every run, and later allocations' own pages would add to them. A no-op
// where the C library is not glibc.
void return_free_heap_pages();

}  // namespace memplan
