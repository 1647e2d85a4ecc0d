// memplan's own loops on the run's OpenMP threads. A session runs with the thread count it set for
// the calling thread (runtime/run_threads.h); oneDNN's primitives use those threads, and between
// them the others wait (spinning, on a core the run may share with them). A loop over a large
// tensor (quantizing, copying) splits into one contiguous chunk per thread instead, so the wait
// becomes work; a small one stays on the calling thread, where waking the others costs more.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>

namespace memplan::rt {

// Runs fn(begin, end) over [0, n) in up to min(omp_get_max_threads(), max_parts) chunks of at
// least `min_chunk` items each (one chunk, on the calling thread, when n is smaller than two of
// them); fn may ask omp_get_thread_num() for a per-thread scratch index, which is below the
// number of chunks (0 on the calling thread). fn must not throw: an exception cannot leave an
// OpenMP region.
template <typename Fn>
void parallel_chunks(uint64_t n, uint64_t min_chunk, const Fn& fn, int max_parts = 1 << 20) {
  const int team = std::max(omp_get_max_threads(), 1);
  const uint64_t most = min_chunk ? n / min_chunk : n;
  const auto parts = static_cast<uint64_t>(std::min<uint64_t>(static_cast<uint64_t>(std::clamp(team, 1, std::max(max_parts, 1))), most));
  if (parts <= 1) {
    fn(uint64_t{0}, n);
    return;
  }
  // The whole team, as oneDNN's regions use it: libgomp keeps a team of one size and makes a new
  // one (allocating) for another size, and an inference must not allocate. Threads past `parts`
  // have nothing to do; a team smaller than asked (OMP_DYNAMIC) takes the chunks in turn.
#pragma omp parallel num_threads(team)
  {
    const auto k = static_cast<uint64_t>(omp_get_num_threads());
    // Chunks differ by one item at most (no n * c product, which could overflow).
    const uint64_t step = n / parts, extra = n % parts;
    for (auto c = static_cast<uint64_t>(omp_get_thread_num()); c < parts; c += k) {
      const uint64_t begin = c * step + std::min(c, extra), end = begin + step + (c < extra ? 1 : 0);
      fn(begin, end);
    }
  }
}

// Below this many bytes a loop is not worth splitting (a few microseconds of one core's work).
inline constexpr uint64_t kParallelChunkBytes = 64 * 1024;

}  // namespace memplan::rt
