#include "ir/constant_operands.h"

#include <limits>

namespace memplan {

std::optional<float> scalar_f32(const Value* v) {
  if (!is_const_f32(v) || v->constant->element_count() != 1) return std::nullopt;
  return static_cast<float>(v->constant->float_at(0));
}

std::optional<std::pair<float, float>> clip_bounds(const Node& clip) {
  float lo = -std::numeric_limits<float>::infinity(), hi = std::numeric_limits<float>::infinity();
  if (clip.opset < 11) {
    lo = clip.attr_float("min", -std::numeric_limits<float>::max());
    hi = clip.attr_float("max", std::numeric_limits<float>::max());
  } else {
    for (size_t k = 1; k < clip.inputs.size() && k < 3; ++k) {
      if (!clip.inputs[k]) continue;
      const std::optional<float> bound = scalar_f32(clip.inputs[k]);
      if (!bound) return std::nullopt;
      (k == 1 ? lo : hi) = *bound;
    }
  }
  if (!(lo <= hi)) return std::nullopt;
  return std::pair{lo, hi};
}

const Value* other_input(const Node& n, const Value* v) {
  if (n.inputs.size() != 2 || n.inputs[0] == n.inputs[1]) return nullptr;
  if (n.inputs[0] == v) return n.inputs[1];
  if (n.inputs[1] == v) return n.inputs[0];
  return nullptr;
}

}  // namespace memplan
