// memplan's own integer convolution: for every output element, the int32 sum over its window of
// (x - x_zero_point) * (w - w_zero_point), handed to an epilogue a row at a time. ConvInteger and
// QLinearConv run it where oneDNN cannot run them exactly, and as their leanest variant (no
// scratchpad at all) where oneDNN's staged copies would set the arena's peak.
//
// It is the loop of last resort, not a slow one: vectorized along each output row (int32 lanes,
// compiled for AVX-512, AVX2 and the baseline), four output channels to each pass over x, and
// split over the run's threads by output rows. The plain scalar loop it replaced ran 400 to 1200
// times as long as oneDNN's VNNI kernel; this one runs within the few tens of times that its
// int32 products (against VNNI's four int8 products per lane) cost.
#pragma once

#include <cstdint>

#include "runtime/kernel.h"
#include "runtime/kernels/quantized/conv_compensation.h"
#include "runtime/kernels/quantized/quantize_common.h"

namespace memplan::rt::quant {

// Receives output channel m's sums for `count` consecutive outputs of one row, the first at index
// `y_index` of y ([N, M, spatial...], plain). Called from the run's threads, each row once.
using IntConvRowSink = void (*)(const void* context, uint64_t y_index, int64_t m, const int32_t* sums, int64_t count);

struct IntConvJob {
  const WindowGeometry* geometry = nullptr;
  const TensorView* x = nullptr;  // uint8 or int8, [N, C, spatial...] plain
  const TensorView* w = nullptr;  // uint8 or int8, [M, C / group, kernel...]
  int32_t x_zero = 0;
  const Param* w_zero = nullptr;  // one value, or one per output channel
  IntConvRowSink sink = nullptr;
  const void* context = nullptr;
};

// Runs the job on the calling thread's OpenMP team (parallel_chunks). The sums wrap as int32: the
// caller bounds the products per output so that they fit.
void run_int_conv(const IntConvJob& job);

}  // namespace memplan::rt::quant
