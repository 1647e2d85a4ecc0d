#include "passes/canonical_activations.h"

#include <cmath>

#include "ir/constant_operands.h"

namespace memplan {
namespace {

bool near(float v, double want) { return std::fabs(static_cast<double>(v) - want) <= 1e-6 * std::fabs(want); }

// `n` is a plain ONNX node `op` with one output, reading v and a constant scalar: the scalar.
std::optional<float> scalar_operand(const Node* n, const char* op, const Value* v) {
  if (!n || n->op_type != op || !n->domain.empty() || n->outputs.size() != 1 || !n->outputs[0]) return std::nullopt;
  return scalar_f32(other_input(*n, v));
}

// When n is v / 6 or v * 0.16666667 (either order): v, else null.
const Value* divided_by_six(const Node* n) {
  if (!n || n->inputs.size() != 2) return nullptr;
  const Value* v = n->inputs[0];
  if (const std::optional<float> d = scalar_operand(n, "Div", v)) return *d == 6.f ? v : nullptr;
  for (const Value* u : n->inputs)
    if (const std::optional<float> m = scalar_operand(n, "Mul", u); m && near(*m, 1.0 / 6.0)) return u;
  return nullptr;
}

// Clip(x + 3, 0, 6) as `clipped`, which only `reader` reads, with the Add read only by the Clip:
// the Clip, else null.
const Node* relu6_of_x_plus_3(const Value* x, const Value* clipped, const Node* reader) {
  const Node* clip = clipped ? clipped->producer : nullptr;
  if (!clip || clip->op_type != "Clip" || !clip->domain.empty() || sole_consumer(clipped) != reader || clip->inputs.empty())
    return nullptr;
  const std::optional<std::pair<float, float>> bounds = clip_bounds(*clip);
  if (!bounds || bounds->first != 0.f || bounds->second != 6.f) return nullptr;
  const Value* sum = clip->inputs[0];
  const Node* add = sum ? sum->producer : nullptr;
  const std::optional<float> three = scalar_operand(add, "Add", x);
  return three && *three == 3.f && sole_consumer(sum) == clip ? clip : nullptr;
}

bool same_static_shape(const Value* a, const Value* b) {
  return a && b && a->type.is_static() && b->type.is_static() && a->type.static_dims() == b->type.static_dims() &&
         a->type.dtype == DType::Float32 && b->type.dtype == DType::Float32;
}

// The nodes a written-out activation ending at `last` consists of (last first), and its x; empty
// when `last` ends none.
struct ActivationForm {
  const Value* x = nullptr;
  std::vector<const Node*> nodes;
};

ActivationForm match_hard_swish(const Node& last) {
  if (!last.domain.empty() || last.outputs.size() != 1 || !last.outputs[0] || last.inputs.size() != 2) return {};
  // x * HardSigmoid(x) and x * (Clip(x + 3, 0, 6) / 6): a Mul of x and the rest.
  if (last.op_type == "Mul") {
    for (int k = 0; k < 2; ++k) {
      const Value* x = last.inputs[static_cast<size_t>(k)];
      const Value* rest = last.inputs[static_cast<size_t>(1 - k)];
      const Node* r = rest ? rest->producer : nullptr;
      if (!r || sole_consumer(rest) != &last || !same_static_shape(x, last.outputs[0])) continue;
      if (r->op_type == "HardSigmoid" && r->domain.empty() && r->inputs.size() == 1 && r->inputs[0] == x &&
          near(r->attr_float("alpha", 0.2f), 1.0 / 6.0) && r->attr_float("beta", 0.5f) == 0.5f)
        return {x, {&last, r}};
      if (const Value* clipped = divided_by_six(r))
        if (const Node* clip = relu6_of_x_plus_3(x, clipped, r)) return {x, {&last, r, clip, clip->inputs[0]->producer}};
    }
  }
  // (x * Clip(x + 3, 0, 6)) / 6
  if (const Value* product = divided_by_six(&last)) {
    const Node* mul = product->producer;
    if (!mul || mul->op_type != "Mul" || !mul->domain.empty() || mul->inputs.size() != 2 || sole_consumer(product) != &last)
      return {};
    for (int k = 0; k < 2; ++k) {
      const Value* x = mul->inputs[static_cast<size_t>(k)];
      if (!same_static_shape(x, last.outputs[0])) continue;
      if (const Node* clip = relu6_of_x_plus_3(x, mul->inputs[static_cast<size_t>(1 - k)], mul))
        return {x, {&last, mul, clip, clip->inputs[0]->producer}};
    }
  }
  return {};
}

// Erf(x / sqrt(2)) + 1 (or x * 0.70710678) as `sum`, which only `reader` reads, with each value
// between read only by the next: the Add, Erf and scaling nodes, else empty.
std::vector<const Node*> erf_of_x_over_sqrt2_plus_1(const Value* x, const Value* sum, const Node* reader) {
  const Node* add = sum ? sum->producer : nullptr;
  if (!add || add->op_type != "Add" || !add->domain.empty() || sole_consumer(sum) != reader) return {};
  for (const Value* e : add->inputs) {
    const std::optional<float> one = scalar_operand(add, "Add", e);
    const Node* erf = e ? e->producer : nullptr;
    if (!one || *one != 1.f || !erf || erf->op_type != "Erf" || !erf->domain.empty() || erf->inputs.size() != 1 ||
        sole_consumer(e) != add)
      continue;
    const Value* scaled = erf->inputs[0];
    const Node* scale = scaled ? scaled->producer : nullptr;
    if (!scale || sole_consumer(scaled) != erf || scale->inputs.size() != 2) continue;
    const std::optional<float> d = scale->inputs[0] == x ? scalar_operand(scale, "Div", x) : std::nullopt;
    const std::optional<float> m = scalar_operand(scale, "Mul", x);
    if ((d && near(*d, std::sqrt(2.0))) || (m && near(*m, 1 / std::sqrt(2.0)))) return {add, erf, scale};
  }
  return {};
}

// The nodes a written-out erf GELU ending at `last` consists of (last first), and its x: the
// product of x, Erf(x / sqrt(2)) + 1 and 0.5 in any grouping of two Muls.
ActivationForm match_gelu(const Node& last) {
  if (last.op_type != "Mul" || !last.domain.empty() || last.outputs.size() != 1 || !last.outputs[0] ||
      last.inputs.size() != 2)
    return {};
  // n is a Mul of v and the constant 0.5.
  const auto halves = [](const Node* n, const Value* v) {
    const std::optional<float> h = scalar_operand(n, "Mul", v);
    return h && *h == 0.5f;
  };
  struct Candidate {
    const Value* x;
    const Value* sum;
    const Node* sum_reader;
  };
  for (int k = 0; k < 2; ++k) {
    const Value* a = last.inputs[static_cast<size_t>(k)];
    const Value* b = last.inputs[static_cast<size_t>(1 - k)];
    const Node* inner = a ? a->producer : nullptr;
    if (!inner || inner->op_type != "Mul" || !inner->domain.empty() || inner->inputs.size() != 2 ||
        sole_consumer(a) != &last)
      continue;
    std::vector<Candidate> candidates;
    if (halves(&last, a)) {  // (x * sum) * 0.5
      candidates.push_back({inner->inputs[0], inner->inputs[1], inner});
      candidates.push_back({inner->inputs[1], inner->inputs[0], inner});
    } else {
      for (const Value* other : inner->inputs)
        if (halves(inner, other)) {
          candidates.push_back({b, other, inner});   // (sum * 0.5) * x
          candidates.push_back({other, b, &last});   // (x * 0.5) * sum
        }
    }
    for (const Candidate& c : candidates) {
      if (!same_static_shape(c.x, last.outputs[0])) continue;
      const std::vector<const Node*> rest = erf_of_x_over_sqrt2_plus_1(c.x, c.sum, c.sum_reader);
      if (rest.empty()) continue;
      ActivationForm form{c.x, {&last, inner}};
      form.nodes.insert(form.nodes.end(), rest.begin(), rest.end());
      return form;
    }
  }
  return {};
}

}  // namespace

int canonicalize_activations(Model& model) {
  return fold_nodes_away(*model.main, [](Graph& g, std::unordered_set<const Node*>& dead) {
    for (auto& n : g.nodes) {
      if (dead.count(n.get())) continue;
      ActivationForm form = match_hard_swish(*n);
      const char* op = "HardSwish";
      if (!form.x) form = match_gelu(*n), op = "Gelu";
      if (!form.x) continue;
      // The last node becomes HardSwish(x); the others, and the values between them, go.
      for (size_t i = 1; i < form.nodes.size(); ++i) {
        dead.insert(form.nodes[i]);
        g.release_value(form.nodes[i]->outputs[0]);
      }
      n->op_type = op;
      n->inputs = {const_cast<Value*>(form.x)};
      n->attributes.clear();
    }
  });
}

}  // namespace memplan
