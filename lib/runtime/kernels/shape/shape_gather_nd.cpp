// GatherND: each index tuple of the last indices axis picks one slice of the data (after
// batch_dims leading axes both share). Indices are checked before every read.
#include <algorithm>

#include "runtime/kernels/common/shape_common.h"
#include "runtime/kernels/shape/factories.h"

namespace memplan::rt::shape {
namespace {

struct GatherNDPlan {
  int k = 0;               // indices.shape[-1]
  uint64_t batches = 1;    // prod(data.shape[:b])
  uint64_t tuples = 1;     // index tuples per batch: prod(indices.shape[b:-1])
  uint64_t slice = 1;      // elements per gathered slice: prod(data.shape[b+k:])
  uint64_t batch_size = 1; // data elements per batch: prod(data.shape[b:])
  std::array<int64_t, kMaxRank> strides{};  // of data
  int out_rank = 0;
  std::array<int64_t, kMaxRank> out_dims{};
};

GatherNDPlan gather_nd_plan(const TensorView& data, const TensorView& idx, int64_t b64, const std::string& where) {
  if (data.rank == 0 || idx.rank == 0) fail_at(where, "data and indices must have rank 1 or more");
  if (b64 < 0 || b64 >= std::min(data.rank, idx.rank))
    fail_at(where, "batch_dims " + std::to_string(b64) + " must be less than the ranks of data and indices");
  const int b = static_cast<int>(b64);
  for (int d = 0; d < b; ++d)
    if (data.dims[d] != idx.dims[d]) fail_at(where, "data and indices differ in batch dimension " + std::to_string(d));
  const int64_t k = idx.dims[idx.rank - 1];
  if (k < 1 || k > data.rank - b)
    fail_at(where, "the last dimension of indices (" + std::to_string(k) + ") must be in [1, " + std::to_string(data.rank - b) + "]");
  GatherNDPlan p;
  p.k = static_cast<int>(k);
  p.batches = product(data.dims.data(), 0, b);
  p.tuples = product(idx.dims.data(), b, idx.rank - 1);
  p.slice = product(data.dims.data(), b + p.k, data.rank);
  p.batch_size = product(data.dims.data(), b, data.rank);
  p.strides = strides_of(data.rank, data.dims.data());
  p.out_rank = idx.rank - 1 + data.rank - b - p.k;
  check_rank(p.out_rank, where);
  int r = 0;
  for (int d = 0; d < idx.rank - 1; ++d) p.out_dims[r++] = idx.dims[d];
  for (int d = b + p.k; d < data.rank; ++d) p.out_dims[r++] = data.dims[d];
  return p;
}

class GatherNDKernel final : public Kernel {
 public:
  GatherNDKernel(std::string where, const Node& n, uint32_t elem)
      : where_(std::move(where)), batch_dims_(n.attr_int("batch_dims", 0)), elem_(elem), dynamic_(any_dynamic(n)) {
    if (!dynamic_) plan_ = gather_nd_plan(static_view(n.inputs[0], where_), static_view(n.inputs[1], where_), batch_dims_, where_);
  }
  void run(const KernelArgs& a) override {
    const TensorView &data = a.inputs[0], &idx = a.inputs[1];
    const GatherNDPlan* p = &plan_;
    GatherNDPlan local;
    if (dynamic_) {
      local = gather_nd_plan(data, idx, batch_dims_, where_);
      set_shape(a.outputs[0], local.out_rank, local.out_dims.data(), where_);
      p = &local;
    }
    const int b = static_cast<int>(batch_dims_);
    const uint64_t bytes = p->slice * elem_;
    std::byte* out = a.outputs[0].data;
    uint64_t t = 0;  // index tuple, counted over all batches
    for (uint64_t batch = 0; batch < p->batches; ++batch) {
      const std::byte* src = data.data + batch * p->batch_size * elem_;
      for (uint64_t i = 0; i < p->tuples; ++i, ++t, out += bytes) {
        int64_t off = 0;
        for (int j = 0; j < p->k; ++j)
          off += wrap_index(int_at(idx, t * p->k + j), data.dims[b + j], b + j, where_) * p->strides[b + j];
        std::memcpy(out, src + static_cast<uint64_t>(off) * elem_, bytes);
      }
    }
  }

 private:
  std::string where_;
  int64_t batch_dims_;
  uint32_t elem_;
  bool dynamic_;
  GatherNDPlan plan_;
};

}  // namespace

Factory make_gather_nd(const Node& n, const KernelEnv& env) {
  std::string where = check_arity(n, env, 2, 2);
  check_indices_type(n.inputs[1], where);
  return std::make_unique<GatherNDKernel>(where, n, movable_size(n.inputs[0]->type.dtype, where));
}

}  // namespace memplan::rt::shape
