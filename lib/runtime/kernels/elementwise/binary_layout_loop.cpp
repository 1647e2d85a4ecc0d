#include "runtime/kernels/elementwise/binary_layout_loop.h"

#include <algorithm>

#include "runtime/kernels/common/parallel_chunks.h"

namespace memplan::rt::elt {
namespace {

// Each loop below is compiled for AVX-512, AVX2 and the baseline, and the CPU picks at load.
#define MEMPLAN_SIMD_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))

// The ops as the other binary loops define them (std::max / std::min order for Max / Min).
template <FlatBinOp op>
inline float apply(float x, float y) {
  if constexpr (op == FlatBinOp::Add) return x + y;
  if constexpr (op == FlatBinOp::Sub) return x - y;
  if constexpr (op == FlatBinOp::Mul) return x * y;
  if constexpr (op == FlatBinOp::Div) return x / y;
  if constexpr (op == FlatBinOp::Max) return x < y ? y : x;
  if constexpr (op == FlatBinOp::Min) return y < x ? y : x;
}

template <FlatBinOp op>
inline void vector_vector(const float* a, const float* b, float* y, uint64_t n) {
#pragma omp simd
  for (uint64_t i = 0; i < n; ++i) y[i] = apply<op>(a[i], b[i]);
}

template <FlatBinOp op, bool swapped>
inline void vector_scalar(const float* a, float s, float* y, uint64_t n) {
#pragma omp simd
  for (uint64_t i = 0; i < n; ++i) y[i] = swapped ? apply<op>(s, a[i]) : apply<op>(a[i], s);
}

// `pixels` blocks of `block` channels, each paired with the same `block` values of b.
template <FlatBinOp op, bool swapped, int block>
inline void blocks_vector(const float* a, const float* b, float* y, uint64_t pixels) {
  for (uint64_t p = 0; p < pixels; ++p) {
#pragma omp simd
    for (int j = 0; j < block; ++j)
      y[p * block + j] = swapped ? apply<op>(b[j], a[p * block + j]) : apply<op>(a[p * block + j], b[j]);
  }
}

template <FlatBinOp op>
MEMPLAN_SIMD_CLONES void run_full(const float* a, const float* b, float* y, uint64_t n, bool swapped) {
  swapped ? vector_vector<op>(b, a, y, n) : vector_vector<op>(a, b, y, n);
}

template <FlatBinOp op>
MEMPLAN_SIMD_CLONES void run_scalar(const float* a, float s, float* y, uint64_t n, bool swapped) {
  swapped ? vector_scalar<op, true>(a, s, y, n) : vector_scalar<op, false>(a, s, y, n);
}

// Pixels [first, last) of a per-channel op on a channels-last tensor: each pixel's C values pair
// with b's C values.
template <FlatBinOp op>
MEMPLAN_SIMD_CLONES void run_pixels(const LayoutLoop& l, const float* a, const float* b, float* y, uint64_t first,
                                    uint64_t last) {
  const auto c = static_cast<uint64_t>(l.c);
  for (uint64_t p = first; p < last; ++p)
    l.swapped ? vector_vector<op>(b, a + p * c, y + p * c, c) : vector_vector<op>(a + p * c, b, y + p * c, c);
}

// Slabs [first, last) of a per-channel op: a slab is one channel's H*W plain elements, or one
// block of channels' H*W*block blocked ones.
template <FlatBinOp op>
MEMPLAN_SIMD_CLONES void run_per_channel(const LayoutLoop& l, const float* a, const float* b, float* y, uint64_t first,
                                         uint64_t last) {
  const auto hw = static_cast<uint64_t>(l.hw);
  const auto block = static_cast<uint64_t>(std::max(l.block, 1));
  const uint64_t slabs_per_image = static_cast<uint64_t>(l.c) / block, slab = hw * block;
  for (uint64_t s = first; s < last; ++s) {
    const float* bs = b + (s % slabs_per_image) * block;
    const float* as = a + s * slab;
    float* ys = y + s * slab;
    if (l.block == 16)
      l.swapped ? blocks_vector<op, true, 16>(as, bs, ys, hw) : blocks_vector<op, false, 16>(as, bs, ys, hw);
    else if (l.block == 8)
      l.swapped ? blocks_vector<op, true, 8>(as, bs, ys, hw) : blocks_vector<op, false, 8>(as, bs, ys, hw);
    else
      l.swapped ? vector_scalar<op, true>(as, *bs, ys, hw) : vector_scalar<op, false>(as, *bs, ys, hw);
  }
}

template <FlatBinOp op>
void run_op(const LayoutLoop& l, const float* a, const float* b, float* y) {
  constexpr uint64_t kMinChunk = kParallelChunkBytes / sizeof(float);
  if (l.operand == Operand::PerChannel && l.channels_last) {
    const uint64_t pixels = static_cast<uint64_t>(l.n) * static_cast<uint64_t>(l.hw);
    parallel_chunks(pixels, std::max<uint64_t>(kMinChunk / std::max<uint64_t>(static_cast<uint64_t>(l.c), 1), 1),
                    [&](uint64_t first, uint64_t last) { run_pixels<op>(l, a, b, y, first, last); });
    return;
  }
  if (l.operand == Operand::PerChannel) {
    const uint64_t slabs = static_cast<uint64_t>(l.n) * static_cast<uint64_t>(l.c) / static_cast<uint64_t>(std::max(l.block, 1));
    const uint64_t slab = l.count() / std::max<uint64_t>(slabs, 1);
    parallel_chunks(slabs, std::max<uint64_t>(kMinChunk / std::max<uint64_t>(slab, 1), 1),
                    [&](uint64_t first, uint64_t last) { run_per_channel<op>(l, a, b, y, first, last); });
    return;
  }
  const bool scalar = l.operand == Operand::Scalar;
  const float s = scalar ? *b : 0.f;
  parallel_chunks(l.count(), kMinChunk, [&](uint64_t begin, uint64_t end) {
    if (scalar)
      run_scalar<op>(a + begin, s, y + begin, end - begin, l.swapped);
    else
      run_full<op>(a + begin, b + begin, y + begin, end - begin, l.swapped);
  });
}

}  // namespace

void LayoutLoop::run(const float* a, const float* b, float* y) const {
  switch (op) {
    case FlatBinOp::Add: return run_op<FlatBinOp::Add>(*this, a, b, y);
    case FlatBinOp::Sub: return run_op<FlatBinOp::Sub>(*this, a, b, y);
    case FlatBinOp::Mul: return run_op<FlatBinOp::Mul>(*this, a, b, y);
    case FlatBinOp::Div: return run_op<FlatBinOp::Div>(*this, a, b, y);
    case FlatBinOp::Max: return run_op<FlatBinOp::Max>(*this, a, b, y);
    case FlatBinOp::Min: return run_op<FlatBinOp::Min>(*this, a, b, y);
  }
}

}  // namespace memplan::rt::elt
