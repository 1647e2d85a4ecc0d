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

}  // namespace memplan
