#include "ir/fused_activation.h"

namespace memplan {

bool has_fused_activation(const Node& node) { return node.attr(kFusedActivationAttr) != nullptr; }

void set_fused_activation(Node& node, FusedActivation act, float clip_min, float clip_max) {
  Attribute fused;
  fused.name = kFusedActivationAttr;
  fused.kind = Attribute::Kind::Int;
  fused.i = static_cast<int64_t>(act);
  node.attributes.push_back(fused);
  if (act != FusedActivation::Clip) return;
  Attribute clip;
  clip.name = kFusedClipAttr;
  clip.kind = Attribute::Kind::Floats;
  clip.floats = {clip_min, clip_max};
  node.attributes.push_back(clip);
}

std::optional<FusedActivation> fused_activation(const Node& node) {
  const int64_t v = node.attr_int(kFusedActivationAttr, 0);
  if (v < static_cast<int64_t>(FusedActivation::None) || v > static_cast<int64_t>(FusedActivation::HardSwish))
    return std::nullopt;
  return static_cast<FusedActivation>(v);
}

void set_pre_activation(Node& node, const PreActivation& pre) {
  for (const auto& [name, values] : {std::pair{kPreScaleAttr, &pre.scale}, std::pair{kPreShiftAttr, &pre.shift}}) {
    Attribute a;
    a.name = name;
    a.kind = Attribute::Kind::Floats;
    a.floats = *values;
    node.attributes.push_back(std::move(a));
  }
  Attribute relu;
  relu.name = kPreReluAttr;
  relu.kind = Attribute::Kind::Int;
  relu.i = pre.relu ? 1 : 0;
  node.attributes.push_back(relu);
}

std::optional<PreActivation> pre_activation(const Node& node) {
  const Attribute* scale = node.attr(kPreScaleAttr);
  const Attribute* shift = node.attr(kPreShiftAttr);
  if (!scale && !shift) return std::nullopt;
  PreActivation pre;
  if (scale && scale->kind == Attribute::Kind::Floats) pre.scale = scale->floats;
  if (shift && shift->kind == Attribute::Kind::Floats) pre.shift = shift->floats;
  pre.relu = node.attr_int(kPreReluAttr, 0) != 0;
  return pre;
}

}  // namespace memplan
