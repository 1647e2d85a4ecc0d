#include "runtime/kernels/linalg/weights_gemv.h"

#include <algorithm>

#include "runtime/kernels/common/parallel_chunks.h"
#include "runtime/kernels/common/simd_clones.h"
#include "runtime/kernels/common/shape_common.h"

namespace memplan::rt::linalg {
namespace {

MEMPLAN_SIMD_CLONES float dot(const float* a, const float* b, int64_t k) {
  float acc = 0;
#pragma omp simd reduction(+ : acc)
  for (int64_t i = 0; i < k; ++i) acc += a[i] * b[i];
  return acc;
}

MEMPLAN_SIMD_CLONES void scaled_add(float s, const float* x, float* y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] += s * x[i];
}

// Outputs per chunk of the run's threads: enough of B's bytes that a chunk is worth a thread.
constexpr uint64_t kOutputsPerChunk = 16;

class WeightsGemvKernel final : public Kernel {
 public:
  WeightsGemvKernel(const WeightsGemv& s, std::string where) : s_(s), where_(std::move(where)) {}

  void run(const KernelArgs& args) override {
    const TensorView &a = args.inputs[0], &b = args.inputs[1];
    const uint64_t mk = static_cast<uint64_t>(s_.m * s_.k), kn = static_cast<uint64_t>(s_.k * s_.n);
    if (a.dtype != DType::Float32 || a.element_count() != mk) shape::fail_at(where_, "A is not the compiled [M, K]");
    if (b.dtype != DType::Float32 || b.element_count() != kn || !b.data) shape::fail_at(where_, "B is not the compiled matrix");
    const float* c = nullptr;
    if (s_.c_rows > 0) {
      const TensorView& cv = args.inputs[2];
      if (cv.dtype != DType::Float32 || cv.element_count() != static_cast<uint64_t>(s_.c_rows * s_.c_cols))
        shape::fail_at(where_, "C does not broadcast as compiled");
      c = cv.as<const float>();
    }
    const float* x = a.as<const float>();
    const float* w = b.as<const float>();
    float* y = args.outputs[0].as<float>();
    const int64_t m = s_.m, k = s_.k, n = s_.n;
    parallel_chunks(static_cast<uint64_t>(n), kOutputsPerChunk, [&](uint64_t begin, uint64_t end) {
      const auto lo = static_cast<int64_t>(begin), hi = static_cast<int64_t>(end);
      if (s_.b_transposed) {
        for (int64_t j = lo; j < hi; ++j)
          for (int64_t r = 0; r < m; ++r) y[r * n + j] = dot(x + r * k, w + j * k, k);
      } else {
        for (int64_t r = 0; r < m; ++r) std::fill(y + r * n + lo, y + r * n + hi, 0.f);
        for (int64_t i = 0; i < k; ++i)
          for (int64_t r = 0; r < m; ++r) scaled_add(x[r * k + i], w + i * n + lo, y + r * n + lo, hi - lo);
      }
      for (int64_t r = 0; r < m; ++r)
        for (int64_t j = lo; j < hi; ++j) {
          float v = s_.alpha * y[r * n + j];
          if (c) v += s_.beta * c[(s_.c_rows == 1 ? 0 : r) * s_.c_cols + (s_.c_cols == 1 ? 0 : j)];
          y[r * n + j] = v;
        }
    });
  }
  std::string implementation() const override { return "memplan weights-in-place gemv"; }

 private:
  WeightsGemv s_;
  std::string where_;
};

}  // namespace

std::unique_ptr<Kernel> make_weights_gemv(const WeightsGemv& shape, std::string where) {
  return std::make_unique<WeightsGemvKernel>(shape, std::move(where));
}

}  // namespace memplan::rt::linalg
