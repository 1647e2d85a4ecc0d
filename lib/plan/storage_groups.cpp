#include "plan/storage_groups.h"

#include <algorithm>
#include <string>
#include <unordered_map>

namespace memplan::plan {
namespace {

// One group while it grows: the union of its members.
struct Group {
  int32_t last = 0;
  uint64_t size = 0;           // the root's
  bool holds_input = false;    // a main-graph input (or a view of one): the caller's bytes
  bool holds_output = false;   // a main-graph output: the caller reads it after the run
};

class Grouper {
 public:
  Grouper(const Graph& g, const std::vector<LocalBuffer>& locals) : g_(g), locals_(locals) {
    out_.root.resize(locals.size());
    out_.kind.assign(locals.size(), AliasKind::None);
    for (size_t i = 0; i < locals.size(); ++i) {
      out_.root[i] = i;
      const LocalBuffer& b = locals[i];
      if (b.kind != LocalBuffer::Kind::Tensor) continue;
      index_[b.value] = i;
      const bool main = g.owner == nullptr;
      groups_[i] = {b.last, b.size, main && b.value->is_graph_input, main && b.value->is_graph_output};
    }
    for (size_t t = 0; t < g.nodes.size(); ++t) step_[g.nodes[t].get()] = static_cast<int32_t>(t);
  }

  StorageGroups run(const AliasRules& rules) {
    for (size_t t = 0; t < g_.nodes.size(); ++t) {
      const Node& n = *g_.nodes[t];
      if (n.outputs.empty() || !n.outputs[0]) continue;
      auto y = index_.find(n.outputs[0]);
      if (y == index_.end()) continue;  // no memory of this frame: bound to the parent, or a weight
      const NodeAliasing a = rules(n);
      if (a.view_of >= 0 && static_cast<size_t>(a.view_of) < n.inputs.size()) {
        try_join(n, y->second, static_cast<size_t>(a.view_of), AliasKind::View, static_cast<int32_t>(t));
        continue;
      }
      for (size_t i : a.in_place)
        if (i < n.inputs.size() && try_join(n, y->second, i, AliasKind::InPlace, static_cast<int32_t>(t))) break;
    }
    return std::move(out_);
  }

 private:
  // Joins output buffer `y` to the group of n's input `input`, or records why not.
  bool try_join(const Node& n, size_t y, size_t input, AliasKind kind, int32_t t) {
    const Value* x = n.inputs[input];
    if (!x) return false;
    const std::string why = refusal(n, y, input, kind, t);
    if (!why.empty()) {
      out_.refused.push_back({n.outputs[0]->name, x->name, n.name, why});
      return false;
    }
    const size_t root = out_.root[index_.at(x)];
    Group& gr = groups_.at(root);
    const Group& mine = groups_.at(y);
    gr.last = std::max(gr.last, mine.last);
    gr.holds_output = gr.holds_output || mine.holds_output;
    groups_.erase(y);
    out_.root[y] = root;
    out_.kind[y] = kind;
    return true;
  }

  std::string refusal(const Node& n, size_t y, size_t input, AliasKind kind, int32_t t) const {
    const Value* x = n.inputs[input];
    if (x->constant) return "'" + x->name + "' is a weight (outside the arena)";
    if (x->dynamic) return "'" + x->name + "' is a dynamic tensor (outside the arena)";
    auto it = index_.find(x);
    if (it == index_.end()) return "'" + x->name + "' lives in the memory of the enclosing graph";
    const size_t root = out_.root[it->second];
    const Group& gr = groups_.at(root);
    if (locals_[y].size > gr.size)
      return "'" + n.outputs[0]->name + "' (" + std::to_string(locals_[y].size) + " bytes) is larger than '" +
             x->name + "' (" + std::to_string(gr.size) + " bytes)";
    if (kind == AliasKind::View) return "";
    if (gr.holds_input) return "'" + x->name + "' is a graph input or a view of one: never written in place";
    if (gr.holds_output) return "'" + x->name + "' is a graph output or a view of one: never written in place";
    if (gr.last > t) return "its bytes are read after this node, by " + last_reader(root, gr.last);
    // The kernel reads input `input` element by element before writing; another input in the same
    // bytes (a Conv's source that is also its addend) it may read anywhere, at any time.
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      auto other = n.inputs[k] ? index_.find(n.inputs[k]) : index_.end();
      if (k != input && other != index_.end() && out_.root[other->second] == root)
        return "this node also reads those bytes as input " + std::to_string(k) + " ('" + n.inputs[k]->name + "')";
    }
    return "";
  }

  // The node that reads group `root` at `step` (for messages).
  std::string last_reader(size_t root, int32_t step) const {
    for (size_t i = 0; i < locals_.size(); ++i)
      if (out_.root[i] == root && locals_[i].value)
        for (const Node* c : locals_[i].value->consumers)
          if (auto s = step_.find(c); s != step_.end() && s->second == step) return c->describe();
    return "step " + std::to_string(step);
  }

  const Graph& g_;
  const std::vector<LocalBuffer>& locals_;
  std::unordered_map<const Value*, size_t> index_;
  std::unordered_map<const Node*, int32_t> step_;
  std::unordered_map<size_t, Group> groups_;  // by root
  StorageGroups out_;
};

}  // namespace

StorageGroups find_storage_groups(const Graph& g, const std::vector<LocalBuffer>& locals, const AliasRules& rules) {
  Grouper grouper(g, locals);
  if (!rules) {
    StorageGroups none;
    for (size_t i = 0; i < locals.size(); ++i) none.root.push_back(i);
    none.kind.assign(locals.size(), AliasKind::None);
    return none;
  }
  return grouper.run(rules);
}

}  // namespace memplan::plan
