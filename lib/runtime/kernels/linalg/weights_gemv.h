// Gemm and MatMul with few rows against a large constant B, read where the model keeps it: no
// reordered copy (pipeline: dnnl_matmul.cpp takes this kernel where A has at most a few rows and
// B is large). A matrix-vector product streams B once; over B's own rows (Gemm's transB, [N, K])
// each output is a dot product, over [K, N] rows of B scaled and added, both at the memory's
// speed, where oneDNN's kernel on a plain B ran 1.5x its blocked copy's time (alexnet's
// 9216 x 4096 layer: 18.6 against 12.2 ms).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/fused_activation.h"
#include "runtime/kernel.h"

namespace memplan::rt::linalg {

// y[M, N] = steps(alpha * A[M, K] x B + beta * C). A is input 0 (float32, row-major), B input 1
// (float32, [N, K] when b_transposed, else [K, N]), C input 2 when c_rows > 0 (broadcast: c_rows 1
// or M, c_cols 1 or N), y output 0; `steps`, a Conv's fused activation, in order.
struct WeightsGemv {
  int64_t m = 1, k = 1, n = 1;
  bool b_transposed = false;
  float alpha = 1, beta = 1;
  int64_t c_rows = 0, c_cols = 0;
  std::vector<EltwiseStep> steps;
};
std::unique_ptr<Kernel> make_weights_gemv(const WeightsGemv& shape, std::string where);

}  // namespace memplan::rt::linalg
