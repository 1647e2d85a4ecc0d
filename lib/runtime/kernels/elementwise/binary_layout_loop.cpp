#include "runtime/kernels/elementwise/binary_layout_loop.h"

#include <algorithm>

#include "runtime/kernels/common/parallel_chunks.h"
#include "runtime/kernels/common/simd_clones.h"

namespace memplan::rt::elt {
namespace {

// The ops as the other binary loops define them (std::max / std::min order for Max / Min; PRelu
// the slope y where x is negative).
template <FlatBinOp op>
MEMPLAN_INLINE float apply(float x, float y) {
  if constexpr (op == FlatBinOp::Add) return x + y;
  if constexpr (op == FlatBinOp::Sub) return x - y;
  if constexpr (op == FlatBinOp::Mul) return x * y;
  if constexpr (op == FlatBinOp::Div) return x / y;
  if constexpr (op == FlatBinOp::Max) return x < y ? y : x;
  if constexpr (op == FlatBinOp::Min) return y < x ? y : x;
  if constexpr (op == FlatBinOp::PRelu) return x < 0.f ? x * y : x;
}

template <FlatBinOp op>
MEMPLAN_INLINE void vector_vector(const float* a, const float* b, float* y, uint64_t n) {
#pragma omp simd
  for (uint64_t i = 0; i < n; ++i) y[i] = apply<op>(a[i], b[i]);
}

template <FlatBinOp op, bool swapped>
MEMPLAN_INLINE void vector_scalar(const float* a, float s, float* y, uint64_t n) {
#pragma omp simd
  for (uint64_t i = 0; i < n; ++i) y[i] = swapped ? apply<op>(s, a[i]) : apply<op>(a[i], s);
}

// `pixels` blocks of `block` channels, each paired with the same `block` values of b.
template <FlatBinOp op, bool swapped, int block>
MEMPLAN_INLINE void blocks_vector(const float* a, const float* b, float* y, uint64_t pixels) {
  for (uint64_t p = 0; p < pixels; ++p) {
#pragma omp simd
    for (int j = 0; j < block; ++j)
      y[p * block + j] = swapped ? apply<op>(b[j], a[p * block + j]) : apply<op>(a[p * block + j], b[j]);
  }
}

// Runs the statement after `op` with `o` the constant FlatBinOp equal to `op`.
#define MEMPLAN_FOR_OP(op, ...)                     \
  switch (op) {                                     \
    case FlatBinOp::Add: {                          \
      constexpr auto o = FlatBinOp::Add;            \
      __VA_ARGS__;                                  \
    } break;                                        \
    case FlatBinOp::Sub: {                          \
      constexpr auto o = FlatBinOp::Sub;            \
      __VA_ARGS__;                                  \
    } break;                                        \
    case FlatBinOp::Mul: {                          \
      constexpr auto o = FlatBinOp::Mul;            \
      __VA_ARGS__;                                  \
    } break;                                        \
    case FlatBinOp::Div: {                          \
      constexpr auto o = FlatBinOp::Div;            \
      __VA_ARGS__;                                  \
    } break;                                        \
    case FlatBinOp::Max: {                          \
      constexpr auto o = FlatBinOp::Max;            \
      __VA_ARGS__;                                  \
    } break;                                        \
    case FlatBinOp::Min: {                          \
      constexpr auto o = FlatBinOp::Min;            \
      __VA_ARGS__;                                  \
    } break;                                        \
    case FlatBinOp::PRelu: {                        \
      constexpr auto o = FlatBinOp::PRelu;          \
      __VA_ARGS__;                                  \
    } break;                                        \
  }

MEMPLAN_SIMD_CLONES void run_full(FlatBinOp op, const float* a, const float* b, float* y, uint64_t n, bool swapped) {
  MEMPLAN_FOR_OP(op, swapped ? vector_vector<o>(b, a, y, n) : vector_vector<o>(a, b, y, n))
}

MEMPLAN_SIMD_CLONES void run_scalar(FlatBinOp op, const float* a, float s, float* y, uint64_t n, bool swapped) {
  MEMPLAN_FOR_OP(op, swapped ? vector_scalar<o, true>(a, s, y, n) : vector_scalar<o, false>(a, s, y, n))
}

// Pixels [first, last) of a per-channel op on a channels-last tensor: each pixel's C values pair
// with b's C values.
MEMPLAN_SIMD_CLONES void run_pixels(const LayoutLoop& l, const float* a, const float* b, float* y, uint64_t first,
                                    uint64_t last) {
  const auto c = static_cast<uint64_t>(l.c);
  for (uint64_t p = first; p < last; ++p) {
    const float* ap = a + p * c;
    float* yp = y + p * c;
    MEMPLAN_FOR_OP(l.op, l.swapped ? vector_vector<o>(b, ap, yp, c) : vector_vector<o>(ap, b, yp, c))
  }
}

// Slabs [first, last) of a per-channel op: a slab is one channel's H*W plain elements, or one
// block of channels' H*W*block blocked ones.
MEMPLAN_SIMD_CLONES void run_per_channel(const LayoutLoop& l, const float* a, const float* b, float* y, uint64_t first,
                                         uint64_t last) {
  const auto hw = static_cast<uint64_t>(l.hw);
  const auto block = static_cast<uint64_t>(std::max(l.block, 1));
  const uint64_t slabs_per_image = static_cast<uint64_t>(l.c) / block, slab = hw * block;
  for (uint64_t s = first; s < last; ++s) {
    const float* bs = b + (s % slabs_per_image) * block;
    const float* as = a + s * slab;
    float* ys = y + s * slab;
    if (l.block == 16) {
      MEMPLAN_FOR_OP(l.op, l.swapped ? blocks_vector<o, true, 16>(as, bs, ys, hw) : blocks_vector<o, false, 16>(as, bs, ys, hw))
    } else if (l.block == 8) {
      MEMPLAN_FOR_OP(l.op, l.swapped ? blocks_vector<o, true, 8>(as, bs, ys, hw) : blocks_vector<o, false, 8>(as, bs, ys, hw))
    } else {
      MEMPLAN_FOR_OP(l.op, l.swapped ? vector_scalar<o, true>(as, *bs, ys, hw) : vector_scalar<o, false>(as, *bs, ys, hw))
    }
  }
}

#undef MEMPLAN_FOR_OP

}  // namespace

void LayoutLoop::run(const float* a, const float* b, float* y) const {
  constexpr uint64_t kMinChunk = kParallelChunkBytes / sizeof(float);
  if (operand == Operand::PerChannel && channels_last) {
    const uint64_t pixels = static_cast<uint64_t>(n) * static_cast<uint64_t>(hw);
    parallel_chunks(pixels, std::max<uint64_t>(kMinChunk / std::max<uint64_t>(static_cast<uint64_t>(c), 1), 1),
                    [&](uint64_t first, uint64_t last) { run_pixels(*this, a, b, y, first, last); });
    return;
  }
  if (operand == Operand::PerChannel) {
    const uint64_t slabs = static_cast<uint64_t>(n) * static_cast<uint64_t>(c) / static_cast<uint64_t>(std::max(block, 1));
    const uint64_t slab = count() / std::max<uint64_t>(slabs, 1);
    parallel_chunks(slabs, std::max<uint64_t>(kMinChunk / std::max<uint64_t>(slab, 1), 1),
                    [&](uint64_t first, uint64_t last) { run_per_channel(*this, a, b, y, first, last); });
    return;
  }
  const bool scalar = operand == Operand::Scalar;
  const float s = scalar ? *b : 0.f;
  parallel_chunks(count(), kMinChunk, [&](uint64_t begin, uint64_t end) {
    if (scalar)
      run_scalar(op, a + begin, s, y + begin, end - begin, swapped);
    else
      run_full(op, a + begin, b + begin, y + begin, end - begin, swapped);
  });
}

}  // namespace memplan::rt::elt
