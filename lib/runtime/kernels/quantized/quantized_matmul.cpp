// MatMulInteger (int32 output) and QLinearMatMul (requantized 8-bit output): numpy matmul with
// batch broadcasting over uint8 / int8 operands, as plain loops with int32 accumulators.
// Zero points are per tensor, per row of A or per column of B; QLinearMatMul's scales per tensor.
#include <algorithm>

#include "runtime/kernel_registry.h"
#include "runtime/kernels/quantized/factories.h"
#include "runtime/kernels/quantized/quantize_common.h"

namespace memplan::rt::quant {
namespace {

using shape::fail_at;
using shape::unsupported_at;

// The operand and output geometry of one run.
struct MatMulShape {
  int64_t M = 1, K = 1, N = 1;
  shape::Broadcast batch;  // over the dims before the last two (A's and B's batch strides)
  int out_rank = 0;
  std::array<int64_t, kMaxRank> out{};
};

MatMulShape matmul_shape(const TensorView& a, const TensorView& b, const std::string& where) {
  if (a.rank < 1 || b.rank < 1) fail_at(where, "operands must have rank 1 or more");
  MatMulShape s;
  // 1-D A is [1, K] (M dropped), 1-D B is [K, 1] (N dropped).
  s.M = a.rank == 1 ? 1 : a.dims[a.rank - 2];
  s.K = a.dims[a.rank - 1];
  const int64_t kb = b.rank == 1 ? b.dims[0] : b.dims[b.rank - 2];
  s.N = b.rank == 1 ? 1 : b.dims[b.rank - 1];
  if (s.K != kb) fail_at(where, "A has K " + std::to_string(s.K) + ", B has " + std::to_string(kb));
  TensorView ab, bb;  // the batch parts
  ab.rank = std::max(a.rank - 2, 0);
  bb.rank = std::max(b.rank - 2, 0);
  std::copy(a.dims.begin(), a.dims.begin() + ab.rank, ab.dims.begin());
  std::copy(b.dims.begin(), b.dims.begin() + bb.rank, bb.dims.begin());
  const TensorView* in[] = {&ab, &bb};
  s.batch = shape::make_broadcast(in, 2, where);
  s.out_rank = s.batch.out_rank;
  std::copy(s.batch.out_dims.begin(), s.batch.out_dims.begin() + s.out_rank, s.out.begin());
  if (a.rank > 1) s.out[s.out_rank++] = s.M;
  if (b.rank > 1) s.out[s.out_rank++] = s.N;
  shape::check_rank(s.out_rank, where);
  return s;
}

// Calls emit(output index, column n, int32 accumulator) for every output element of
// (A - azp) x (B - bzp); azp per row, bzp per column.
template <typename F>
void int_matmul(const TensorView& a, const TensorView& b, const MatMulShape& s, const Param& azp, const Param& bzp,
                F&& emit) {
  const int64_t M = s.M, K = s.K, N = s.N;
  shape::for_each_broadcast<2>(s.batch, [&](uint64_t batch, const std::array<int64_t, 2>& off) {
    const uint64_t a0 = static_cast<uint64_t>(off[0] * M * K), b0 = static_cast<uint64_t>(off[1] * K * N);
    for (int64_t m = 0; m < M; ++m) {
      const int32_t za = azp.zero(static_cast<uint64_t>(m));
      for (int64_t n = 0; n < N; ++n) {
        const int32_t zb = bzp.zero(static_cast<uint64_t>(n));
        int32_t acc = 0;
        for (int64_t k = 0; k < K; ++k)
          acc += (qint_at(a, a0 + static_cast<uint64_t>(m * K + k)) - za) *
                 (qint_at(b, b0 + static_cast<uint64_t>(k * N + n)) - zb);
        emit((batch * static_cast<uint64_t>(M) + static_cast<uint64_t>(m)) * static_cast<uint64_t>(N) +
                 static_cast<uint64_t>(n),
             acc);
      }
    }
  });
}

// MatMulInteger's int32 output, accumulated row by row in place: for each row of A, every k adds
// (a - za) * b[k, :] along B's contiguous row (the column-wise walk above strides through B), and
// the column zero points come off at the end as sum_k (a - za) * zb[n]. Exact: with K <= 2^15 no
// partial sum leaves int32. Typed element access (the per-element type switch of qint_at was most
// of the time).
template <typename TA, typename TB>
void int_matmul_rows(const TensorView& a, const TensorView& b, const MatMulShape& s, const Param& azp,
                     const Param& bzp, int32_t* out) {
  const int64_t M = s.M, K = s.K, N = s.N;
  const TA* av = a.as<const TA>();
  const TB* bv = b.as<const TB>();
  shape::for_each_broadcast<2>(s.batch, [&](uint64_t batch, const std::array<int64_t, 2>& off) {
    const TA* a0 = av + off[0] * M * K;
    const TB* b0 = bv + off[1] * K * N;
    for (int64_t m = 0; m < M; ++m) {
      int32_t* row = out + (static_cast<int64_t>(batch) * M + m) * N;
      std::fill_n(row, N, 0);
      const int32_t za = azp.zero(static_cast<uint64_t>(m));
      int32_t sum_a = 0;
      for (int64_t k = 0; k < K; ++k) {
        const int32_t x = static_cast<int32_t>(a0[m * K + k]) - za;
        sum_a += x;
        if (x == 0) continue;
        const TB* brow = b0 + k * N;
        for (int64_t n = 0; n < N; ++n) row[n] += x * static_cast<int32_t>(brow[n]);
      }
      if (bzp.v)
        for (int64_t n = 0; n < N; ++n) row[n] -= sum_a * bzp.zero(static_cast<uint64_t>(n));
    }
  });
}

void int_matmul_rows(const TensorView& a, const TensorView& b, const MatMulShape& s, const Param& azp,
                     const Param& bzp, int32_t* out) {
  const bool a8 = a.dtype == DType::Int8, b8 = b.dtype == DType::Int8;
  if (a8 && b8) int_matmul_rows<int8_t, int8_t>(a, b, s, azp, bzp, out);
  else if (a8) int_matmul_rows<int8_t, uint8_t>(a, b, s, azp, bzp, out);
  else if (b8) int_matmul_rows<uint8_t, int8_t>(a, b, s, azp, bzp, out);
  else int_matmul_rows<uint8_t, uint8_t>(a, b, s, azp, bzp, out);
}

// Input indices of the operands and their parameters; scales are -1 for MatMulInteger.
struct Layout {
  size_t a, b, a_zp, b_zp;
  int a_scale, b_scale, y_scale, y_zp;
};
constexpr Layout kInteger{0, 1, 2, 3, -1, -1, -1, -1};
constexpr Layout kQLinear{0, 3, 2, 5, 1, 4, 6, 7};

class QMatMulKernel final : public Kernel {
 public:
  QMatMulKernel(std::string where, Layout l, DType out) : where_(std::move(where)), l_(l), out_(out) {
    quant_range(out, range_);
  }
  void run(const KernelArgs& args) override {
    const TensorView& a = args.inputs[l_.a];
    const TensorView& b = args.inputs[l_.b];
    const MatMulShape s = matmul_shape(a, b, where_);
    TensorView& y = args.outputs[0];
    shape::set_shape(y, s.out_rank, s.out.data(), where_);
    // K values of at most 255 * 255 each must fit the int32 accumulator.
    if (s.K > (int64_t{1} << 15)) unsupported_at(where_, "K " + std::to_string(s.K) + " could overflow int32");
    const Param azp = param(args, l_.a_zp, a.rank > 1 ? static_cast<uint64_t>(s.M) : 0, a.dtype, where_, "a_zero_point");
    const Param bzp = param(args, l_.b_zp, b.rank > 1 ? static_cast<uint64_t>(s.N) : 0, b.dtype, where_, "b_zero_point");
    if (l_.y_scale < 0) {
      int_matmul_rows(a, b, s, azp, bzp, y.as<int32_t>());
      return;
    }
    auto scalar = [&](int k, const char* what) {
      const Param p = param(args, static_cast<size_t>(k), 0, DType::Float32, where_, what);
      if (!p.v) fail_at(where_, std::string(what) + " is missing");
      return p.scale(0);
    };
    const float mult = scalar(l_.a_scale, "a_scale") * scalar(l_.b_scale, "b_scale") / scalar(l_.y_scale, "y_scale");
    const int32_t yzp = param(args, static_cast<size_t>(l_.y_zp), 0, out_, where_, "y_zero_point").zero(0);
    int_matmul(a, b, s, azp, bzp,
               [&](uint64_t i, int32_t acc) { qstore(y, i, saturate_round(static_cast<float>(acc) * mult, yzp, range_)); });
  }

 private:
  std::string where_;
  Layout l_;
  DType out_;
  QRange range_;
};

}  // namespace

std::unique_ptr<Kernel> make_matmul_integer(const Node& n, const KernelEnv& env) {
  const std::string at = check_arity(n, env, 2, 4);
  quant_type(n.inputs[0], at, "A");
  quant_type(n.inputs[1], at, "B");
  if (n.outputs[0]->type.dtype != DType::Int32) fail_at(at, "the output must be int32");
  return std::make_unique<QMatMulKernel>(at, kInteger, DType::Int32);
}

std::unique_ptr<Kernel> make_qlinear_matmul(const Node& n, const KernelEnv& env) {
  const std::string at = check_arity(n, env, 8, 8);
  quant_type(n.inputs[0], at, "a");
  quant_type(n.inputs[3], at, "b");
  const DType out = quant_type(n.inputs[7], at, "y_zero_point");
  if (n.outputs[0]->type.dtype != out) fail_at(at, "the output type differs from y_zero_point's");
  return std::make_unique<QMatMulKernel>(at, kQLinear, out);
}

}  // namespace memplan::rt::quant
