#include "plan/storage_groups.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>

namespace memplan::plan {
namespace {

// Per local buffer: 1 for a main-graph input the caller binds (GroupOptions::external_inputs).
std::vector<uint8_t> external_inputs(const Graph& g, const std::vector<LocalBuffer>& locals, const GroupOptions& o) {
  std::vector<uint8_t> out(locals.size(), 0);
  for (size_t i = 0; i < locals.size(); ++i) {
    const Value* v = locals[i].value;
    out[i] = o.external_inputs && !g.owner && v && v->is_graph_input && !v->producer;
  }
  return out;
}

// One group while it grows: the union of its members.
struct Group {
  int32_t last = 0;
  uint64_t size = 0;           // the root's
  bool holds_input = false;    // a main-graph input (or a view of one): the caller's bytes
  bool holds_output = false;   // a main-graph output: the caller reads it after the run
};

class Grouper {
 public:
  Grouper(const Graph& g, const std::vector<LocalBuffer>& locals, const AliasRules& rules, const GroupOptions& o)
      : g_(g), locals_(locals), rules_(rules), opts_(o) {
    out_.root.resize(locals.size());
    out_.kind.assign(locals.size(), AliasKind::None);
    out_.offset.assign(locals.size(), 0);
    out_.bound_output.assign(locals.size(), -1);
    out_.external = external_inputs(g, locals, o);
    for (size_t i = 0; i < locals.size(); ++i) {
      out_.root[i] = i;
      const LocalBuffer& b = locals[i];
      if (b.kind != LocalBuffer::Kind::Tensor) continue;
      index_[b.value] = i;
      const bool main = g.owner == nullptr;
      groups_[i] = {b.last, b.size, main && b.value->is_graph_input, main && b.value->is_graph_output};
    }
    for (size_t t = 0; t < g.nodes.size(); ++t) step_[g.nodes[t].get()] = static_cast<int32_t>(t);
    for (size_t t = 0; t < g.nodes.size(); ++t) aliasing_.push_back(rules_(*g.nodes[t]));
  }

  StorageGroups run() {
    // Concatenations first, the last of a chain first: it decides where its inputs' bytes are,
    // and a shorter concatenation of the same inputs then finds them in place, at its start.
    if (opts_.concat_in_place)
      for (size_t t = g_.nodes.size(); t-- > 0;)
        if (aliasing_[t].concat && !opts_.copied_concats.count(g_.nodes[t].get())) place_concat(*g_.nodes[t]);
    for (size_t t = 0; t < g_.nodes.size(); ++t) {
      const Node& n = *g_.nodes[t];
      const NodeAliasing& a = aliasing_[t];
      if (n.outputs.empty() || !n.outputs[0]) continue;
      auto y = index_.find(n.outputs[0]);
      if (auto bound = opts_.bound_outputs.find(n.outputs[0]); bound != opts_.bound_outputs.end()) {
        for (size_t i : a.in_place)
          if (i < n.inputs.size() && try_bind(n, i, bound->second, static_cast<int32_t>(t))) break;
        continue;
      }
      if (y == index_.end()) continue;  // no memory of this frame: a weight, or the parent's
      if (!groups_.count(y->second)) continue;  // already shares: a concatenation's slice
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
  bool alone(size_t i) const { return out_.root[i] == i && groups_.count(i) && members_of(i) == 1; }
  size_t members_of(size_t root) const { return static_cast<size_t>(std::count(out_.root.begin(), out_.root.end(), root)); }

  void refuse(const Node& n, const Value* x, std::string why) {
    out_.refused.push_back({n.outputs[0]->name, x ? x->name : std::string(), n.name, std::move(why)});
  }

  // Concat in place: each input is written by its producer straight into its slice of the
  // output (all of them, or none); or, when they already lie end to end in a longer
  // concatenation's bytes, the output is that stretch of them.
  void place_concat(const Node& n) {
    auto y = n.outputs.empty() || !n.outputs[0] ? index_.end() : index_.find(n.outputs[0]);
    if (y == index_.end()) return;
    std::vector<size_t> xs;
    std::unordered_set<const Value*> seen;
    uint64_t total = 0;
    for (const Value* x : n.inputs) {
      auto it = x ? index_.find(x) : index_.end();
      std::string why;
      if (it == index_.end()) why = "it has no memory of this frame (a weight, or the enclosing graph's)";
      else if (!x->producer || x->producer->graph != &g_) why = "it is a graph input";
      else if (!seen.insert(x).second) why = "it is concatenated twice";
      else if (locals_[it->second].size % opts_.alignment != 0) why = "its size is not a multiple of the alignment";
      if (!why.empty()) return refuse(n, x, "concatenation in place: input '" + (x ? x->name : "") + "': " + why);
      xs.push_back(it->second);
      total += locals_[it->second].size;
    }
    if (xs.empty() || total != locals_[y->second].size) return;
    const bool fresh = std::all_of(xs.begin(), xs.end(), [&](size_t i) { return alone(i); });
    // Into the output's bytes, wherever they are: its own, or its slice of a later Concat.
    if (fresh && (alone(y->second) || out_.kind[y->second] == AliasKind::ConcatSlice)) {
      const size_t root = out_.root[y->second];
      uint64_t at = out_.offset[y->second];
      Group& gr = groups_.at(root);
      for (size_t i : xs) {
        out_.root[i] = root;
        out_.kind[i] = AliasKind::ConcatSlice;
        out_.offset[i] = at;
        at += locals_[i].size;
        gr.last = std::max(gr.last, groups_.at(i).last);
        groups_.erase(i);
      }
      return;
    }
    // The inputs already lie end to end inside one group: the output is that stretch.
    const size_t root = out_.root[xs.front()];
    uint64_t at = out_.offset[xs.front()];
    const uint64_t start = at;
    for (size_t i : xs) {
      if (out_.root[i] != root || out_.offset[i] != at || out_.kind[i] != AliasKind::ConcatSlice)
        return refuse(n, n.inputs[0], "concatenation in place: its inputs already share other bytes");
      at += locals_[i].size;
    }
    if (!alone(y->second)) return refuse(n, n.inputs[0], "concatenation in place: its output already shares bytes");
    Group& gr = groups_.at(root);
    gr.last = std::max(gr.last, groups_.at(y->second).last);
    groups_.erase(y->second);
    out_.root[y->second] = root;
    out_.kind[y->second] = AliasKind::Concat;
    out_.offset[y->second] = start;
  }

  // Joins output buffer `y` to the bytes of n's input `input`, or records why not.
  bool try_join(const Node& n, size_t y, size_t input, AliasKind kind, int32_t t) {
    const Value* x = n.inputs[input];
    if (!x) return false;
    const std::string why = refusal(n, y, input, kind, t);
    if (!why.empty()) {
      refuse(n, x, why);
      return false;
    }
    const size_t xi = index_.at(x);
    const size_t root = out_.root[xi];
    Group& gr = groups_.at(root);
    const Group& mine = groups_.at(y);
    gr.last = std::max(gr.last, mine.last);
    gr.holds_output = gr.holds_output || mine.holds_output;
    groups_.erase(y);
    out_.root[y] = root;
    out_.kind[y] = kind;
    out_.offset[y] = out_.offset[xi];
    return true;
  }

  // Moves the group of n's input `input` into the bytes of the If output that n's output, the bound
  // output `bound`, is written into; or records why not.
  bool try_bind(const Node& n, size_t input, const BoundOutput& bound, int32_t t) {
    const Value* x = n.inputs[input];
    if (!x) return false;
    std::string why = refusal(n, SIZE_MAX, input, AliasKind::InPlace, t);
    if (why.empty()) {
      const size_t root = out_.root[index_.at(x)];
      if (groups_.at(root).size > bound.bytes)
        why = "'" + x->name + "' and what shares its bytes (" + std::to_string(groups_.at(root).size) +
              " bytes) do not fit in the If output (" + std::to_string(bound.bytes) + " bytes)";
      else if (out_.bound_output[root] >= 0)
        why = "its bytes are already in an If output";
      else if (out_.offset[index_.at(x)] != 0)  // the output is written from the If output's start
        why = "'" + x->name + "' does not start its group's bytes";
    }
    if (!why.empty()) {
      refuse(n, x, "written into the If output: " + why);
      return false;
    }
    out_.bound_output[out_.root[index_.at(x)]] = bound.index;
    return true;
  }

  // Why n's output (local buffer `y`, or SIZE_MAX for a bound output) may not share the bytes of
  // its input `input` as `kind`; empty when it may.
  std::string refusal(const Node& n, size_t y, size_t input, AliasKind kind, int32_t t) const {
    const Value* x = n.inputs[input];
    if (x->constant) return "'" + x->name + "' is a weight (outside the arena)";
    if (x->dynamic) return "'" + x->name + "' is a dynamic tensor (outside the arena)";
    auto it = index_.find(x);
    if (it == index_.end()) return "'" + x->name + "' lives in the memory of the enclosing graph";
    const size_t root = out_.root[it->second];
    const Group& gr = groups_.at(root);
    const uint64_t room = root == it->second ? gr.size : locals_[it->second].size;
    if (y != SIZE_MAX && locals_[y].size > room)
      return "'" + n.outputs[0]->name + "' (" + std::to_string(locals_[y].size) + " bytes) is larger than '" +
             x->name + "' (" + std::to_string(room) + " bytes)";
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
    // A Loop's body reads what it captures at any iteration.
    for (const Value* c : n.implicit_inputs) {
      auto other = index_.find(c);
      if (other != index_.end() && out_.root[other->second] == root)
        return "its subgraphs read those bytes ('" + c->name + "')";
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
  const AliasRules& rules_;
  const GroupOptions opts_;
  std::vector<NodeAliasing> aliasing_;  // by step
  std::unordered_map<const Value*, size_t> index_;
  std::unordered_map<const Node*, int32_t> step_;
  std::unordered_map<size_t, Group> groups_;  // by root
  StorageGroups out_;
};

}  // namespace

StorageGroups find_storage_groups(const Graph& g, const std::vector<LocalBuffer>& locals, const AliasRules& rules,
                                  const GroupOptions& options) {
  if (!rules) {
    StorageGroups none;
    for (size_t i = 0; i < locals.size(); ++i) none.root.push_back(i);
    none.kind.assign(locals.size(), AliasKind::None);
    none.offset.assign(locals.size(), 0);
    none.bound_output.assign(locals.size(), -1);
    none.external = external_inputs(g, locals, options);
    return none;
  }
  return Grouper(g, locals, rules, options).run();
}

}  // namespace memplan::plan
