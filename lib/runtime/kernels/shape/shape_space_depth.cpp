// DepthToSpace and SpaceToDepth: a reshape to 6-D, a transpose and a reshape back, done as one
// strided copy whose 6-D read strides are fixed at load for static shapes.
#include <algorithm>

#include "runtime/kernels/common/shape_common.h"
#include "runtime/kernels/shape/factories.h"

namespace memplan::rt::shape {
namespace {

enum class Mode { DepthToSpaceDCR, DepthToSpaceCRD, SpaceToDepth };

// The copy in output order and the output's 4-D shape.
void space_depth_plan(const TensorView& in, Mode mode, int64_t b, CopyPlan& plan, std::array<int64_t, kMaxRank>& out,
                      const std::string& where) {
  if (in.rank != 4) fail_at(where, "the input must have rank 4 (N, C, H, W), not " + std::to_string(in.rank));
  const int64_t n = in.dims[0], c = in.dims[1], h = in.dims[2], w = in.dims[3];
  const int64_t hw = h * w, chw = c * hw;
  plan = CopyPlan{};
  plan.rank = 6;
  auto set = [&](std::array<int64_t, 6> dims, std::array<int64_t, 6> strides) {
    for (int i = 0; i < 6; ++i) {
      plan.dims[i] = dims[i];
      plan.strides[i] = strides[i];
    }
  };
  if (mode == Mode::SpaceToDepth) {
    if (h % b != 0 || w % b != 0)
      fail_at(where, "height " + std::to_string(h) + " and width " + std::to_string(w) + " must be multiples of the blocksize " +
                         std::to_string(b));
    // Output (n, b1, b2, c, h', w') reads x[n, c, h' * b + b1, w' * b + b2].
    set({n, b, b, c, h / b, w / b}, {chw, w, 1, hw, b * w, b});
    out = {n, c * b * b, h / b, w / b};
  } else {
    if (c % (b * b) != 0)
      fail_at(where, "channels " + std::to_string(c) + " must be a multiple of blocksize squared (" + std::to_string(b * b) + ")");
    const int64_t cc = c / (b * b);
    // Output (n, c', h, b1, w, b2) reads channel (b1 * b + b2) * c' + c' (DCR) or c' * b * b + b1 * b + b2 (CRD).
    if (mode == Mode::DepthToSpaceDCR) set({n, cc, h, b, w, b}, {chw, hw, w, b * cc * hw, 1, cc * hw});
    else set({n, cc, h, b, w, b}, {chw, b * b * hw, w, b * hw, 1, hw});
    out = {n, cc, h * b, w * b};
  }
  plan.finish();
}

class SpaceDepthKernel final : public Kernel {
 public:
  SpaceDepthKernel(std::string where, const Node& n, Mode mode, int64_t block, uint32_t elem)
      : where_(std::move(where)), mode_(mode), block_(block), elem_(elem), dynamic_(any_dynamic(n)) {
    if (!dynamic_) {
      std::array<int64_t, kMaxRank> dims{};
      space_depth_plan(static_view(n.inputs[0], where_), mode_, block_, plan_, dims, where_);
      const TensorView out = static_view(n.outputs[0], where_);
      if (out.rank != 4 || !std::equal(dims.begin(), dims.begin() + 4, out.dims.begin()))
        fail_at(where_, "the output shape " + n.outputs[0]->type.shape_string() + " does not match the computed shape");
    }
  }
  void run(const KernelArgs& a) override {
    const CopyPlan* p = &plan_;
    CopyPlan local;
    if (dynamic_) {
      std::array<int64_t, kMaxRank> dims{};
      space_depth_plan(a.inputs[0], mode_, block_, local, dims, where_);
      set_shape(a.outputs[0], 4, dims.data(), where_);
      p = &local;
    }
    strided_copy(a.outputs[0].data, a.inputs[0].data, elem_, *p);
  }

 private:
  std::string where_;
  Mode mode_;
  int64_t block_;
  uint32_t elem_;
  bool dynamic_;
  CopyPlan plan_;
};

}  // namespace

Factory make_space_depth(const Node& n, const KernelEnv& env) {
  std::string where = check_arity(n, env, 1, 1);
  const uint32_t elem = movable_size(n.inputs[0]->type.dtype, where);
  if (!n.attr("blocksize")) fail_at(where, "the blocksize attribute is missing");
  const int64_t block = n.attr_int("blocksize", 0);
  if (block < 1 || block > (int64_t{1} << 20)) fail_at(where, "blocksize " + std::to_string(block) + " is out of range");
  Mode mode = Mode::SpaceToDepth;
  if (n.op_type == "DepthToSpace") {
    const std::string m = n.attr_string("mode", "DCR");
    if (m != "DCR" && m != "CRD") fail_at(where, "mode '" + m + "' is not DCR or CRD");
    mode = m == "DCR" ? Mode::DepthToSpaceDCR : Mode::DepthToSpaceCRD;
  }
  return std::make_unique<SpaceDepthKernel>(where, n, mode, block, elem);
}

}  // namespace memplan::rt::shape
