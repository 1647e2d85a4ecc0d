#include "runtime/kernels/linalg/weights_gemv.h"

#include <algorithm>

#include "ir/fused_activation.h"
#include "memplan/error.h"
#include "runtime/kernels/common/eltwise_step.h"
#include "runtime/kernels/common/parallel_chunks.h"
#include "runtime/kernels/common/shape_common.h"
#include "runtime/kernels/common/simd_clones.h"

namespace memplan::rt::linalg {
namespace {

// v8 (simd_clones.h): everything here is inlined into the clones; -Wpsabi is off down to
// WeightsGemvKernel.
#if defined(__GNUC__)  // GCC and clang
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
#endif
MEMPLAN_INLINE void add8(float* p, v8 x) { store8(p, load8(p) + x); }

// Over [K, N] rows of B: y's columns [lo, hi) for M rows of A, B's rows eight at a time, each a
// contiguous stream, each y vector loaded and stored once per eight rows of B. (A sum kept in y for
// every row of B, as this kernel did, ran at 1.4x ONNX Runtime's time at one thread and scaled no
// further at two on an LSTM's 512 x 2048 steps; sums held in registers down a block of columns
// read B 256 bytes a row at an 8 KB stride, slower still.) Row r's sums go to sums[r][j - lo].
template <int M>
MEMPLAN_INLINE void product_kn(const float* x, int64_t k, const float* w, int64_t n, int64_t lo, int64_t hi,
                               float* const* sums) {
  for (int r = 0; r < M; ++r) std::fill(sums[r], sums[r] + (hi - lo), 0.f);
  constexpr int64_t kRows = 8;
  int64_t i = 0;
  for (; i + kRows <= k; i += kRows) {
    const float* b = w + i * n;
    float xs[M][kRows];
    for (int r = 0; r < M; ++r)
      for (int64_t t = 0; t < kRows; ++t) xs[r][t] = x[r * k + i + t];
    int64_t j = lo;
    for (; j + 8 <= hi; j += 8) {
      const v8 b0 = load8(b + j), b1 = load8(b + n + j),
               b2 = load8(b + 2 * n + j), b3 = load8(b + 3 * n + j),
               b4 = load8(b + 4 * n + j), b5 = load8(b + 5 * n + j),
               b6 = load8(b + 6 * n + j), b7 = load8(b + 7 * n + j);
      for (int r = 0; r < M; ++r) {
        add8(sums[r] + (j - lo), (xs[r][0] * b0 + xs[r][1] * b1 + xs[r][2] * b2 + xs[r][3] * b3) +
                                     (xs[r][4] * b4 + xs[r][5] * b5 + xs[r][6] * b6 + xs[r][7] * b7));
      }
    }
    for (; j < hi; ++j)
      for (int r = 0; r < M; ++r)
        for (int64_t t = 0; t < kRows; ++t) sums[r][j - lo] += xs[r][t] * b[t * n + j];
  }
  for (; i < k; ++i)
    for (int r = 0; r < M; ++r)
      for (int64_t j = lo; j < hi; ++j) sums[r][j - lo] += x[r * k + i] * w[i * n + j];
}

// Over B's own [N, K] rows: each output a dot product of a row of A and a row of B, four rows of B
// at a time (four chains of sums, not one whose every step waits for the last).
template <int M>
MEMPLAN_INLINE void product_nk(const float* x, int64_t k, const float* w, int64_t n, int64_t lo, int64_t hi, float* y) {
  const int64_t k8 = k / 8 * 8;
  int64_t j = lo;
  for (; j + 4 <= hi; j += 4)
    for (int r = 0; r < M; ++r) {
      const float* xr = x + r * k;
      const float *w0 = w + j * k, *w1 = w0 + k, *w2 = w1 + k, *w3 = w2 + k;
      v8 a0 = {}, a1 = {}, a2 = {}, a3 = {};
      for (int64_t i = 0; i < k8; i += 8) {
        const v8 xv = load8(xr + i);
        a0 += xv * load8(w0 + i);
        a1 += xv * load8(w1 + i);
        a2 += xv * load8(w2 + i);
        a3 += xv * load8(w3 + i);
      }
      float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      for (int e = 0; e < 8; ++e) s0 += a0[e], s1 += a1[e], s2 += a2[e], s3 += a3[e];
      for (int64_t i = k8; i < k; ++i) s0 += xr[i] * w0[i], s1 += xr[i] * w1[i], s2 += xr[i] * w2[i], s3 += xr[i] * w3[i];
      float* yr = y + r * n + j;
      yr[0] = s0, yr[1] = s1, yr[2] = s2, yr[3] = s3;
    }
  for (; j < hi; ++j)
    for (int r = 0; r < M; ++r) {
      float s = 0;
      for (int64_t i = 0; i < k; ++i) s += x[r * k + i] * w[j * k + i];
      y[r * n + j] = s;
    }
}

// y's columns [lo, hi) for m (1 to kWeightsInPlaceRows, 4) rows of A; over [K, N] rows of B, row
// r's sums go to sums[r][j - lo].
MEMPLAN_SIMD_CLONES void product(const float* x, int64_t m, int64_t k, const float* w, int64_t n, bool b_transposed,
                                 int64_t lo, int64_t hi, float* y, float* const* sums) {
  switch (m * 2 + (b_transposed ? 1 : 0)) {
    case 2: return product_kn<1>(x, k, w, n, lo, hi, sums);
    case 3: return product_nk<1>(x, k, w, n, lo, hi, y);
    case 4: return product_kn<2>(x, k, w, n, lo, hi, sums);
    case 5: return product_nk<2>(x, k, w, n, lo, hi, y);
    case 6: return product_kn<3>(x, k, w, n, lo, hi, sums);
    case 7: return product_nk<3>(x, k, w, n, lo, hi, y);
    case 8: return product_kn<4>(x, k, w, n, lo, hi, sums);
    default: return product_nk<4>(x, k, w, n, lo, hi, y);
  }
}

#if defined(__GNUC__)  // GCC and clang
#pragma GCC diagnostic pop
#endif

// Outputs per chunk of the run's threads: enough of B's bytes that a chunk is worth a thread.
constexpr uint64_t kOutputsPerChunk = 16;

// Over [K, N] rows of B, a row of sums is stored and B's rows loaded at the same column, a little
// apart in memory. Where the sums lie up to kAliasWindow bytes past B's rows modulo 4 KB, the
// loads of the next columns match the stores still in flight in the 12 address bits the CPU
// compares, and wait for them: an RNN-T's 512 x 2048 LSTM steps, whose outputs the plan put 48
// bytes past the weights, ran 0.10 ms each against 0.06 elsewhere (AMD Zen 4; any x86 core checks
// loads against stores this way). Such sums go to the stack, half a page off B, kTile columns at a
// time, and are copied out.
constexpr uintptr_t kPage = 4096, kAliasWindow = 512;
constexpr int64_t kTile = 1024;

bool sums_alias_loads(const float* sums, const float* b) {
  return (reinterpret_cast<uintptr_t>(sums) - reinterpret_cast<uintptr_t>(b)) % kPage < kAliasWindow;
}

// y's columns [lo, hi) for m rows of A over [K, N] rows of B.
void product_kn_rows(const float* x, int64_t m, int64_t k, const float* w, int64_t n, int64_t lo, int64_t hi, float* y) {
  float* rows[kWeightsInPlaceRows];
  bool alias = false;
  for (int64_t r = 0; r < m; ++r) {
    rows[r] = y + r * n + lo;
    alias = alias || sums_alias_loads(rows[r], w + lo);
  }
  if (!alias) return product(x, m, k, w, n, false, lo, hi, y, rows);
  // Each row's tile starts half a page past B's columns, modulo a page.
  constexpr int64_t kSlack = static_cast<int64_t>(kPage / sizeof(float));
  alignas(64) float stack[kWeightsInPlaceRows][kTile + kSlack];
  for (int64_t t = lo; t < hi; t += kTile) {
    const int64_t end = std::min(hi, t + kTile);
    const uintptr_t want = (reinterpret_cast<uintptr_t>(w + t) + kPage / 2) % kPage;
    for (int64_t r = 0; r < m; ++r) {
      const uintptr_t have = reinterpret_cast<uintptr_t>(stack[r]) % kPage;
      rows[r] = stack[r] + (want + kPage - have) % kPage / sizeof(float);
    }
    product(x, m, k, w, n, false, t, end, y, rows);
    for (int64_t r = 0; r < m; ++r) std::copy(rows[r], rows[r] + (end - t), y + r * n + t);
  }
}

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
      if (s_.b_transposed) product(x, m, k, w, n, true, lo, hi, y, nullptr);
      else product_kn_rows(x, m, k, w, n, lo, hi, y);
      for (int64_t r = 0; r < m; ++r)
        for (int64_t j = lo; j < hi; ++j) {
          float v = s_.alpha * y[r * n + j];
          if (c) v += s_.beta * c[(s_.c_rows == 1 ? 0 : r) * s_.c_cols + (s_.c_cols == 1 ? 0 : j)];
          y[r * n + j] = v;
        }
      for (const EltwiseStep& step : s_.steps)
        for (int64_t r = 0; r < m; ++r) apply_step(step, y + r * n + lo, static_cast<uint64_t>(hi - lo));
    });
  }
  std::string implementation() const override { return "memplan weights-in-place gemv"; }

 private:
  WeightsGemv s_;
  std::string where_;
};

}  // namespace

std::unique_ptr<Kernel> make_weights_gemv(const WeightsGemv& shape, std::string where) {
  if (shape.m < 1 || shape.m > kWeightsInPlaceRows) fail_internal(where + ": a weights-in-place gemv takes 1 to 4 rows of A");
  return std::make_unique<WeightsGemvKernel>(shape, std::move(where));
}

}  // namespace memplan::rt::linalg
