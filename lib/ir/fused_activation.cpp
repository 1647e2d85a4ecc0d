#include "ir/fused_activation.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ir/constant_operands.h"

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
  if (v < static_cast<int64_t>(FusedActivation::None) || v > static_cast<int64_t>(FusedActivation::Chain))
    return std::nullopt;
  return static_cast<FusedActivation>(v);
}

std::optional<std::vector<EltwiseStep>> fused_steps(const Node& node) {
  using K = EltwiseStep::Kind;
  const std::optional<FusedActivation> act = fused_activation(node);
  if (!act) return std::nullopt;
  switch (*act) {
    case FusedActivation::None: return std::vector<EltwiseStep>{};
    case FusedActivation::Relu: return std::vector<EltwiseStep>{{K::Relu, 0.f, 0.f}};
    case FusedActivation::Swish: return std::vector<EltwiseStep>{{K::Swish, 1.f, 0.f}};
    case FusedActivation::HardSwish: return std::vector<EltwiseStep>{{K::HardSwish, 0.f, 0.f}};
    case FusedActivation::Clip: {
      const Attribute* a = node.attr(kFusedClipAttr);
      if (!a || a->kind != Attribute::Kind::Floats || a->floats.size() != 2 || !(a->floats[0] <= a->floats[1]))
        return std::nullopt;
      return std::vector<EltwiseStep>{{K::Clip, a->floats[0], a->floats[1]}};
    }
    case FusedActivation::Chain: break;
  }
  const Attribute* a = node.attr(kFusedEltwiseAttr);
  if (!a || a->kind != Attribute::Kind::Floats || a->floats.empty() || a->floats.size() % 3 != 0) return std::nullopt;
  std::vector<EltwiseStep> steps;
  for (size_t i = 0; i < a->floats.size(); i += 3) {
    const float kind = a->floats[i];
    if (!(kind >= static_cast<float>(K::Linear) && kind <= static_cast<float>(K::GeluTanh)) || kind != static_cast<float>(static_cast<int>(kind)))
      return std::nullopt;
    const EltwiseStep s{static_cast<K>(static_cast<int>(kind)), a->floats[i + 1], a->floats[i + 2]};
    if (s.kind == K::Clip && !(s.alpha <= s.beta)) return std::nullopt;
    steps.push_back(s);
  }
  return steps;
}

bool add_fused_step(std::vector<EltwiseStep>& steps, const EltwiseStep& step) {
  using K = EltwiseStep::Kind;
  if (!steps.empty() && steps.back().kind == step.kind) {
    EltwiseStep& last = steps.back();
    switch (step.kind) {
      case K::Linear:  // a2 (a1 x + b1) + b2
        last = {K::Linear, step.alpha * last.alpha, step.alpha * last.beta + step.beta};
        return true;
      case K::Clip:  // clip(clip(x, l1, h1), l2, h2) = clip(x, clamp(l1, l2, h2), clamp(h1, l2, h2))
        last = {K::Clip, std::clamp(last.alpha, step.alpha, step.beta), std::clamp(last.beta, step.alpha, step.beta)};
        return true;
      case K::Relu:  // leaky(leaky(x, a1), a2) = leaky(x, a1 a2) for a1 >= 0
        if (last.alpha < 0.f) return false;
        last.alpha *= step.alpha;
        return true;
      default: return false;
    }
  }
  for (const EltwiseStep& s : steps)
    if (s.kind == step.kind) return false;
  steps.push_back(step);
  return true;
}

void set_fused_steps(Node& node, const std::vector<EltwiseStep>& steps) {
  std::erase_if(node.attributes, [](const Attribute& a) {
    return a.name == kFusedActivationAttr || a.name == kFusedClipAttr || a.name == kFusedEltwiseAttr;
  });
  set_fused_activation(node, FusedActivation::Chain);
  Attribute chain;
  chain.name = kFusedEltwiseAttr;
  chain.kind = Attribute::Kind::Floats;
  for (const EltwiseStep& s : steps)
    chain.floats.insert(chain.floats.end(), {static_cast<float>(static_cast<int>(s.kind)), s.alpha, s.beta});
  node.attributes.push_back(std::move(chain));
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

std::vector<EltwiseStep> eltwise_steps(const Node& n, const Value* y, bool gelu) {
  using K = EltwiseStep::Kind;
  constexpr float inf = std::numeric_limits<float>::infinity();
  if (!n.domain.empty() || n.outputs.size() != 1 || !n.outputs[0] || n.inputs.empty() || n.inputs[0] == nullptr)
    return {};
  const Value* out = n.outputs[0];
  if (!out->type.is_static() || !y->type.is_static() || out->type.static_dims() != y->type.static_dims() ||
      out->type.dtype != DType::Float32)
    return {};
  const std::string& op = n.op_type;
  const bool binary = op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Max" || op == "Min";
  if (binary) {
    if (n.inputs.size() != 2) return {};  // (a variadic Max or Min of more)
    const std::optional<float> c = scalar_f32(other_input(n, y));
    if (!c) return {};
    const bool y_first = n.inputs[0] == y;
    if (op == "Add") return {{K::Linear, 1.f, *c}};
    if (op == "Sub") return {y_first ? EltwiseStep{K::Linear, 1.f, -*c} : EltwiseStep{K::Linear, -1.f, *c}};
    if (op == "Mul") return {{K::Linear, *c, 0.f}};
    if (op == "Div" && y_first && *c != 0.f && std::isfinite(1.f / *c)) return {{K::Linear, 1.f / *c, 0.f}};
    if (op == "Max") return {{K::Clip, *c, inf}};
    if (op == "Min") return {{K::Clip, -inf, *c}};
    return {};  // c / y, or a division by 0
  }
  if (n.inputs.size() > 1 && op != "Clip") return {};
  if (op == "Relu") return {{K::Relu, 0.f, 0.f}};
  if (op == "LeakyRelu") return {{K::Relu, n.attr_float("alpha", 0.01f), 0.f}};
  if (op == "HardSwish") return {{K::HardSwish, 0.f, 0.f}};
  if (op == "Sigmoid") return {{K::Logistic, 0.f, 0.f}};
  if (op == "Gelu" && gelu) {
    const std::string approximate = n.attr_string("approximate", "none");
    if (approximate == "none") return {{K::GeluErf, 0.f, 0.f}};
    if (approximate == "tanh") return {{K::GeluTanh, 0.f, 0.f}};
  }
  if (op == "HardSigmoid") return {{K::Linear, n.attr_float("alpha", 0.2f), n.attr_float("beta", 0.5f)}, {K::Clip, 0.f, 1.f}};
  if (op == "Clip") {
    const std::optional<std::pair<float, float>> bounds = clip_bounds(n);
    if (bounds) return {{K::Clip, bounds->first, bounds->second}};
  }
  return {};
}

}  // namespace memplan
