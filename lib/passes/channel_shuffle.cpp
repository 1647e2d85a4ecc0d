#include "passes/channel_shuffle.h"

#include "ir/channel_shuffle.h"

namespace memplan {
namespace {

bool is_op(const Node* n, const char* op) {
  return n && n->op_type == op && n->domain.empty() && n->outputs.size() == 1 && n->outputs[0];
}

std::vector<int64_t> static_dims(const Value* v) {
  return v && v->type.is_static() && !v->shape_varies ? v->type.static_dims() : std::vector<int64_t>{};
}

// The three nodes of a channel shuffle ending at the Reshape `last`, and its group count; an
// empty match when `last` ends none.
struct Shuffle {
  Node* first = nullptr;  // Reshape x [N, C, H, W] -> [N, G, C/G, ...]
  Node* transpose = nullptr;
  int64_t groups = 0;
};

Shuffle match_shuffle(Node& last) {
  if (!is_op(&last, "Reshape")) return {};
  Value* t = last.inputs.empty() ? nullptr : last.inputs[0];
  Node* transpose = t ? t->producer : nullptr;
  if (!is_op(transpose, "Transpose") || sole_consumer(t) != &last || transpose->inputs.size() != 1) return {};
  Value* split = transpose->inputs[0];
  Node* first = split ? split->producer : nullptr;
  if (!is_op(first, "Reshape") || sole_consumer(split) != transpose || first->inputs.empty()) return {};
  const std::vector<int64_t> x = static_dims(first->inputs[0]), s = static_dims(split), y = static_dims(last.outputs[0]);
  // x and y are [N, C, H, W] alike; s is [N, G, C/G] followed by [H, W] or [H*W].
  if (x.size() != 4 || x != y || (s.size() != 5 && s.size() != 4) || s[0] != x[0] || s[1] < 1 || s[2] < 1 ||
      s[1] * s[2] != x[1] || (s.size() == 5 ? s[3] != x[2] || s[4] != x[3] : s[3] != x[2] * x[3]))
    return {};
  std::vector<int64_t> perm = transpose->attr_ints("perm");
  std::vector<int64_t> want{0, 2, 1, 3, 4};
  want.resize(s.size());
  if (perm != want) return {};
  return {first, transpose, s[1]};
}

}  // namespace

int fold_channel_shuffles(Model& model) {
  return fold_nodes_away(*model.main, [](Graph& g, std::unordered_set<const Node*>& dead) {
    for (auto& n : g.nodes) {
      if (dead.count(n.get())) continue;
      const Shuffle s = match_shuffle(*n);
      if (!s.first) continue;
      // The middle Transpose reads x and writes y; both Reshapes and the 5-D values between go.
      Node& t = *s.transpose;
      Value* x = s.first->inputs[0];
      g.release_value(s.first->outputs[0]);
      g.release_value(t.outputs[0]);
      t.inputs = {x};
      t.outputs = {n->outputs[0]};
      n->outputs[0] = nullptr;
      t.attributes.clear();
      t.set_attr_int(kChannelShuffleAttr, s.groups);
      dead.insert(s.first);
      dead.insert(n.get());
    }
  });
}

}  // namespace memplan
