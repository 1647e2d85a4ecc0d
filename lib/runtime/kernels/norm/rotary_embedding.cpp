// RotaryEmbedding (opset 23): rotates the first rotary_embedding_dim elements of each head's vector
// by position-dependent angles, given as cos and sin caches (indexed by position_ids, or one row
// per batch and position), either in halves (x[i] with x[i + R/2]) or interleaved (x[2i] with
// x[2i + 1]); the rest of the vector is copied. The input is [B, heads, S, D], or [B, S, heads * D]
// with num_heads. The layout is read in place: no transposes.
#include <algorithm>

#include "runtime/kernels/common/parallel_chunks.h"
#include "runtime/kernels/common/shape_common.h"
#include "runtime/kernels/norm/factories.h"

namespace memplan::rt::norm {
using namespace shape;
namespace {

class RotaryKernel final : public Kernel {
 public:
  RotaryKernel(std::string where, bool interleaved, int64_t rotary_dim, int64_t num_heads)
      : where_(std::move(where)), interleaved_(interleaved), rotary_dim_(rotary_dim), num_heads_(num_heads) {}

  void run(const KernelArgs& a) override {
    const TensorView& x = a.inputs[0];
    const TensorView& cos = a.inputs[1];
    const TensorView& sin = a.inputs[2];
    const TensorView* ids = a.inputs.size() > 3 && a.inputs[3].data ? &a.inputs[3] : nullptr;
    if (x.rank != 3 && x.rank != 4) fail_at(where_, "the input must have rank 3 or 4");
    const int64_t b = x.dims[0], s = x.rank == 4 ? x.dims[2] : x.dims[1];
    int64_t heads = x.rank == 4 ? x.dims[1] : num_heads_;
    if (heads <= 0 || (x.rank == 3 && x.dims[2] % heads != 0))
      fail_at(where_, "a rank-3 input needs num_heads that divides its hidden size");
    const int64_t d = x.rank == 4 ? x.dims[3] : x.dims[2] / heads;
    const int64_t r = rotary_dim_ ? rotary_dim_ : d, half = r / 2;
    if (r > d || r % 2 != 0) fail_at(where_, "rotary_embedding_dim must be even and at most the head size");
    if (cos.rank < 1 || cos.dims[cos.rank - 1] != half || sin.element_count() != cos.element_count())
      fail_at(where_, "the cos and sin caches must end in rotary_embedding_dim / 2 = " + std::to_string(half));
    const uint64_t rows = cos.element_count() / static_cast<uint64_t>(std::max<int64_t>(half, 1));
    if (!ids && rows != static_cast<uint64_t>(b * s)) fail_at(where_, "without position_ids the caches must be [batch, sequence, R / 2]");
    if (ids && ids->element_count() != static_cast<uint64_t>(b * s)) fail_at(where_, "position_ids must be [batch, sequence]");
    set_shape(a.outputs[0], x.rank, x.dims.data(), where_);
    const float* xs = x.as<const float>();
    const float* cs = cos.as<const float>();
    const float* sn = sin.as<const float>();
    float* ys = a.outputs[0].as<float>();
    // Element (batch, head, position, i) of either layout.
    const auto offset = [&](int64_t bi, int64_t h, int64_t p) {
      return x.rank == 4 ? ((bi * heads + h) * s + p) * d : ((bi * s + p) * heads + h) * d;
    };
    // The cache row of (batch, position) k. Bad position ids are found before anything is
    // written, outside the threads.
    const int64_t* id = ids ? ids->as<const int64_t>() : nullptr;
    const auto row_of = [id](int64_t k) { return id ? id[k] : k; };
    for (int64_t k = 0; id && k < b * s; ++k)
      if (id[k] < 0 || static_cast<uint64_t>(id[k]) >= rows)
        fail_at(where_, "position id " + std::to_string(id[k]) + " is out of range for a cache of " + std::to_string(rows) + " rows");
    parallel_chunks(static_cast<uint64_t>(b * heads * s), std::max<uint64_t>(kParallelChunkBytes / 4 / std::max<int64_t>(d, 1), 1),
                    [&](uint64_t begin, uint64_t end) {
                      for (uint64_t v = begin; v < end; ++v) {
                        const auto p = static_cast<int64_t>(v % static_cast<uint64_t>(s));
                        const auto h = static_cast<int64_t>(v / static_cast<uint64_t>(s) % static_cast<uint64_t>(heads));
                        const auto bi = static_cast<int64_t>(v / static_cast<uint64_t>(s * heads));
                        const int64_t o = offset(bi, h, p);
                        const float* c = cs + row_of(bi * s + p) * half;
                        const float* sv = sn + row_of(bi * s + p) * half;
                        const float* in = xs + o;
                        float* out = ys + o;
                        for (int64_t i = 0; i < half; ++i) {
                          const int64_t i1 = interleaved_ ? 2 * i : i, i2 = interleaved_ ? 2 * i + 1 : i + half;
                          const float x1 = in[i1], x2 = in[i2];
                          out[i1] = c[i] * x1 - sv[i] * x2;
                          out[i2] = sv[i] * x1 + c[i] * x2;
                        }
                        std::copy(in + r, in + d, out + r);
                      }
                    });
  }

 private:
  std::string where_;
  bool interleaved_;
  int64_t rotary_dim_, num_heads_;
};

}  // namespace

Factory make_rotary_embedding(const Node& n, const KernelEnv& env) {
  std::string where = check_arity(n, env, 3, 4);
  require_float32_inputs(n, 3, where);
  if (const Value* ids = input_at(n, 3); ids && ids->type.dtype != DType::Int64)
    fail_at(where, "position_ids must be int64");
  return std::make_unique<RotaryKernel>(std::move(where), n.attr_int("interleaved", 0) != 0,
                                        n.attr_int("rotary_embedding_dim", 0), n.attr_int("num_heads", 0));
}

}  // namespace memplan::rt::norm
