// One run of input elements folded, element by element, into a run of output elements: the inner
// loop of memplan's pooling windows (dnnl/window_pool.cpp: each window tap adds one input line to
// an output line) and of its reductions over axes that do not end the shape
// (reduce/reduce_kernels.cpp: each reduced index adds one input run to the output run). Compiled
// for AVX-512, AVX2 and the baseline; the CPU picks at load (common/simd_clones.h).
#pragma once

#include <cstdint>

namespace memplan::rt {

enum class LineOp { Max, Min, Add, AddAbs, AddSquare };

// out[i] = op(out[i], in[i]) for i < n: the larger, the smaller, out + in, out + |in|, out + in².
// The runs must not overlap.
void fold_line(LineOp op, float* out, const float* in, int64_t n);

}  // namespace memplan::rt
