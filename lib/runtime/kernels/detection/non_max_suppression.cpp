// NonMaxSuppression, as ONNX Runtime does it: per batch and class, the boxes scoring above
// score_threshold are taken by decreasing score (ties: lower index first), each kept unless its
// IoU with a box already kept for that class exceeds iou_threshold, until
// max_output_boxes_per_class are kept. Candidates are sorted in the scratchpad.
#include <algorithm>
#include <cmath>

#include "runtime/kernels/common/shape_common.h"
#include "runtime/kernels/detection/factories.h"

namespace memplan::rt::shape {
namespace {

struct Box {
  float y1, x1, y2, x2;  // y1 <= y2, x1 <= x2
};

Box box_at(const float* b, bool center) {
  if (center) {  // [x_center, y_center, width, height]
    const float xc = b[0], yc = b[1], w = b[2], h = b[3];
    return {yc - h / 2, xc - w / 2, yc + h / 2, xc + w / 2};
  }
  return {std::min(b[0], b[2]), std::min(b[1], b[3]), std::max(b[0], b[2]), std::max(b[1], b[3])};
}

// True when the boxes overlap by more than `threshold` (IoU); empty boxes never suppress.
bool suppresses(const Box& a, const Box& b, float threshold) {
  const float iy = std::min(a.y2, b.y2) - std::max(a.y1, b.y1), ix = std::min(a.x2, b.x2) - std::max(a.x1, b.x1);
  if (!(iy > 0 && ix > 0)) return false;
  const float inter = iy * ix;
  const float area_a = (a.y2 - a.y1) * (a.x2 - a.x1), area_b = (b.y2 - b.y1) * (b.x2 - b.x1);
  const float uni = area_a + area_b - inter;
  if (!(area_a > 0 && area_b > 0 && uni > 0)) return false;
  return inter / uni > threshold;
}

class NmsKernel final : public Kernel {
 public:
  NmsKernel(std::string where, bool center, uint64_t max_boxes)
      : where_(std::move(where)), center_(center), scratch_(2 * max_boxes * sizeof(int64_t)) {}
  uint64_t scratchpad_bytes() const override { return scratch_; }

  void run(const KernelArgs& a) override {
    const TensorView &boxes = a.inputs[0], &scores = a.inputs[1];
    if (boxes.rank != 3 || boxes.dims[2] != 4) fail_at(where_, "boxes must have the shape [batches, boxes, 4]");
    if (scores.rank != 3 || scores.dims[0] != boxes.dims[0] || scores.dims[2] != boxes.dims[1])
      fail_at(where_, "scores must have the shape [batches, classes, boxes] matching boxes");
    const uint64_t batches = static_cast<uint64_t>(boxes.dims[0]), classes = static_cast<uint64_t>(scores.dims[1]),
                   n = static_cast<uint64_t>(boxes.dims[1]);
    if (n > scratch_ / (2 * sizeof(int64_t))) fail_at(where_, std::to_string(n) + " boxes exceed the planned scratchpad");
    int64_t max_out = 0;
    float iou = 0, score_min = 0;
    const bool has_score = optional_scalar(a, 4, score_min);
    if (a.inputs.size() > 2 && a.inputs[2].data) {
      if (a.inputs[2].element_count() != 1) fail_at(where_, "max_output_boxes_per_class must hold one element");
      max_out = std::max<int64_t>(int_at(a.inputs[2], 0), 0);
    }
    optional_scalar(a, 3, iou);
    if (iou < 0 || iou > 1) fail_at(where_, "iou_threshold must be in [0, 1]");

    TensorView& out = a.outputs[0];
    int64_t* sel = out.as<int64_t>();
    int64_t* cand = reinterpret_cast<int64_t*>(a.scratchpad);
    int64_t* kept = cand + n;
    uint64_t total = 0;
    for (uint64_t b = 0; b < batches; ++b)
      for (uint64_t c = 0; c < classes; ++c) {
        const float* s = scores.as<const float>() + (b * classes + c) * n;
        const float* bx = boxes.as<const float>() + b * n * 4;
        uint64_t m = 0;
        for (uint64_t i = 0; i < n; ++i)
          if (!has_score || s[i] > score_min) cand[m++] = static_cast<int64_t>(i);
        // NaN scores rank lowest, so the order stays a strict weak ordering.
        auto key = [&](int64_t i) { return std::isnan(s[i]) ? -INFINITY : s[i]; };
        std::sort(cand, cand + m, [&](int64_t i, int64_t j) { return key(i) > key(j) || (key(i) == key(j) && i < j); });
        uint64_t k = 0;
        for (uint64_t q = 0; q < m && static_cast<int64_t>(k) < max_out; ++q) {
          const Box cur = box_at(bx + cand[q] * 4, center_);
          bool keep = true;
          for (uint64_t p = 0; p < k && keep; ++p) keep = !suppresses(box_at(bx + kept[p] * 4, center_), cur, iou);
          if (!keep) continue;
          kept[k++] = cand[q];
          check_fits((total + 1) * 3 * sizeof(int64_t), out, where_);
          sel[total * 3] = static_cast<int64_t>(b);
          sel[total * 3 + 1] = static_cast<int64_t>(c);
          sel[total * 3 + 2] = cand[q];
          ++total;
        }
      }
    const int64_t dims[2] = {static_cast<int64_t>(total), 3};
    set_shape(out, 2, dims, where_);
  }

 private:
  // A present one-element float input; false (leaving `v`) when omitted.
  bool optional_scalar(const KernelArgs& a, size_t i, float& v) const {
    if (i >= a.inputs.size() || !a.inputs[i].data) return false;
    if (a.inputs[i].element_count() != 1) fail_at(where_, "input " + std::to_string(i) + " must hold one element");
    v = *a.inputs[i].as<const float>();
    return true;
  }

  std::string where_;
  bool center_;
  uint64_t scratch_;
};

}  // namespace

Factory make_non_max_suppression(const Node& n, const KernelEnv& env) {
  std::string where = check_arity(n, env, 2, 5);
  for (size_t i : {0, 1, 3, 4})
    if (const Value* v = input_at(n, i); v && v->type.dtype != DType::Float32)
      unsupported_at(where, "input " + std::to_string(i) + " of type " + dtype_name(v->type.dtype) + " is not supported (float32 only)");
  if (const Value* v = input_at(n, 2); v && v->type.dtype != DType::Int64) fail_at(where, "max_output_boxes_per_class must be int64");
  if (n.outputs[0]->type.dtype != DType::Int64) fail_at(where, "the output must be int64");
  const int64_t center = n.attr_int("center_point_box", 0);
  if (center != 0 && center != 1) fail_at(where, "center_point_box must be 0 or 1");
  // Boxes per batch: the scratchpad holds that many candidates and kept boxes.
  const Value* boxes = n.inputs[0];
  uint64_t max_boxes = boxes->capacity_bytes / (4 * sizeof(float));
  if (!shape_is_dynamic(boxes)) {
    const TensorView v = static_view(boxes, where);
    if (v.rank != 3) fail_at(where, "boxes must have the shape [batches, boxes, 4]");
    max_boxes = static_cast<uint64_t>(v.dims[1]);
  }
  if (max_boxes > (uint64_t{1} << 50)) unsupported_at(where, "too many boxes");
  return std::make_unique<NmsKernel>(where, center != 0, max_boxes);
}

}  // namespace memplan::rt::shape
