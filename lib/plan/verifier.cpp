#include "plan/verifier.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "ir/control_flow_ports.h"
#include "ir/layout_transpose.h"
#include "memplan/error.h"
#include "plan/lifetimes.h"
#include "util/checked.h"

namespace memplan {
namespace {

[[noreturn]] void reject(const std::string& msg) { throw Error(ErrorKind::Verification, "plan verification failed: " + msg); }

// One piece of memory in use: absolute bytes [begin, end) during ticks [first, last].
struct Use {
  uint64_t begin, end;
  int64_t first, last;
  std::string what;
};

// Sweeps uses in time, keeping the live ones ordered by address: since live uses are disjoint
// (or we have already failed), checking each new use against its address neighbours suffices.
void check_disjoint(std::vector<Use> uses, const std::string& where) {
  std::erase_if(uses, [](const Use& u) { return u.begin == u.end; });
  std::vector<size_t> by_start(uses.size());
  for (size_t i = 0; i < uses.size(); ++i) by_start[i] = i;
  std::sort(by_start.begin(), by_start.end(), [&](size_t a, size_t b) { return uses[a].first < uses[b].first; });
  std::multimap<int64_t, size_t> ends;   // last tick -> use
  std::map<uint64_t, size_t> live;       // begin address -> use
  for (size_t i : by_start) {
    const Use& u = uses[i];
    while (!ends.empty() && ends.begin()->first < u.first) {
      live.erase(uses[ends.begin()->second].begin);
      ends.erase(ends.begin());
    }
    auto next = live.lower_bound(u.begin);
    if (next != live.end() && uses[next->second].begin < u.end)
      reject(where + ": " + u.what + " and " + uses[next->second].what + " share bytes while both are live");
    if (next != live.begin()) {
      auto prev = std::prev(next);
      if (uses[prev->second].end > u.begin)
        reject(where + ": " + u.what + " and " + uses[prev->second].what + " share bytes while both are live");
    }
    live.emplace(u.begin, i);
    ends.emplace(u.last, i);
  }
}

// Step of every node of g (its index in execution order).
std::unordered_map<const Node*, int64_t> steps_of(const Graph& g) {
  std::unordered_map<const Node*, int64_t> step;
  for (size_t t = 0; t < g.nodes.size(); ++t) step[g.nodes[t].get()] = static_cast<int64_t>(t);
  return step;
}

// Last step at which each value of g is read by g's nodes, directly or from inside their subgraphs.
std::unordered_map<const Value*, int64_t> last_reads(const Graph& g) {
  std::unordered_map<const Value*, int64_t> last;
  for (size_t t = 0; t < g.nodes.size(); ++t) {
    const Node& n = *g.nodes[t];
    auto read = [&](const Value* v) {
      if (v && v->graph == &g) last[v] = std::max<int64_t>(last.count(v) ? last[v] : -1, static_cast<int64_t>(t));
    };
    for (const Value* v : n.inputs) read(v);
    for (const auto& sub : n.subgraphs)
      for_each_graph(*sub, [&](Graph& s) {
        for (const auto& inner : s.nodes)
          for (const Value* v : inner->inputs) read(v);
        for (const Value* v : s.outputs) read(v);
      });
  }
  return last;
}

// A tensor buffer with its lifetime from the IR.
struct Member {
  const Value* value;
  const PlannedBuffer* b;
  size_t index;  // into the graph's buffers
  int64_t first, end;
};

// Nodes whose output 0 is input 0's bytes: the view ops, and a Transpose between NCHW and NHWC
// whose NCHW side is stored channels-last.
bool is_view_node(const Node& n) {
  const std::string& op = n.op_type;
  return op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze" || op == "Identity" ||
         op == "Dropout" || transpose_keeps_bytes(n);
}

// Storage groups, checked without trusting the planner. Each member lies inside its root's bytes.
// A view is made by a view op from a member at its offset. A concatenation's slice is an input
// of a Concat whose output is in the group, at that input's place; a Concat with such slices has
// all its inputs in place. A member whose producer writes (in place, or into a slice) writes
// over no bytes that a member made before it still reads afterwards, nor over a main-graph input.
std::map<size_t, std::vector<const Member*>> verify_groups(const Graph& g, const GraphPlan& gp,
                                                           const std::vector<Member>& members) {
  const std::string where = g.path();
  std::map<size_t, std::vector<const Member*>> groups;
  std::unordered_map<const Value*, const Member*> member_of;
  std::unordered_map<const Value*, size_t> root_of;
  for (const Member& m : members) {
    const int32_t r = m.b->group;
    if (r >= 0) {
      if (static_cast<size_t>(r) >= gp.buffers.size() || gp.buffers[static_cast<size_t>(r)].kind != BufferKind::Tensor ||
          gp.buffers[static_cast<size_t>(r)].group != -1)
        reject(where + ": '" + m.b->label() + "' names a storage group whose root is not a tensor buffer");
      const PlannedBuffer& root = gp.buffers[static_cast<size_t>(r)];
      if (m.b->offset < root.offset || m.b->size > root.size || m.b->offset - root.offset > root.size - m.b->size)
        reject(where + ": '" + m.b->label() + "' does not lie on the bytes of its group's root '" + root.label() + "'");
    }
    if ((r >= 0) != (m.b->alias != AliasKind::None))
      reject(where + ": '" + m.b->label() + "' has a storage group without an alias kind, or the reverse");
    const size_t root = r >= 0 ? static_cast<size_t>(r) : m.index;
    groups[root].push_back(&m);
    root_of[m.value] = root;
    member_of[m.value] = &m;
  }
  auto in_group = [&](const Value* x, size_t root) {
    auto it = x ? root_of.find(x) : root_of.end();
    return it != root_of.end() && it->second == root;
  };
  // A Concat's inputs lie end to end from its output's offset.
  auto concat_in_place = [&](const Node& c, const Member& out, size_t root) {
    uint64_t at = out.b->offset;
    for (const Value* x : c.inputs) {
      if (!in_group(x, root) || member_of.at(x)->b->offset != at) return false;
      at += x->capacity_bytes;
    }
    return at == out.b->offset + out.value->capacity_bytes;
  };
  for (const auto& [group_root, group] : groups)
    for (const Member* m : group) {
      const size_t root = group_root;  // lambdas below capture it (clang 14 cannot capture a binding)
      const AliasKind kind = m->b->alias;
      const Node* n = m->value->producer;
      const auto t = m->first;
      if (n && n->op_type == "Concat" && !n->outputs.empty() && n->outputs[0] == m->value &&
          (kind == AliasKind::Concat || std::any_of(n->inputs.begin(), n->inputs.end(), [&](const Value* x) {
             return in_group(x, root) && member_of.at(x)->b->alias == AliasKind::ConcatSlice;
           })) &&
          !concat_in_place(*n, *m, root))
        reject(where + ": the inputs of " + n->describe() + " do not lie end to end in its output's bytes");
      if (kind == AliasKind::None) continue;
      if (!n || n->graph != &g || m->b->node != t ||
          (kind != AliasKind::ConcatSlice && (n->outputs.empty() || n->outputs[0] != m->value)))
        reject(where + ": '" + m->b->label() + "' shares bytes but is not output 0 of the node at its step");
      if (kind == AliasKind::View) {
        if (!is_view_node(*n) || n->inputs.empty() || !in_group(n->inputs[0], root) ||
            member_of.at(n->inputs[0])->b->offset != m->b->offset)
          reject(where + ": '" + m->b->label() + "' is planned as a view, but " + n->describe() +
                 " is no view of a tensor at its bytes");
        continue;
      }
      if (kind == AliasKind::Concat) {
        if (n->op_type != "Concat") reject(where + ": '" + m->b->label() + "' is planned as a concatenation, but " + n->describe() + " is none");
        continue;
      }
      if (kind == AliasKind::ConcatSlice) {
        const bool sliced = std::any_of(m->value->consumers.begin(), m->value->consumers.end(), [&](const Node* c) {
          return c->graph == &g && c->op_type == "Concat" && !c->outputs.empty() && in_group(c->outputs[0], root);
        });
        if (!sliced) reject(where + ": '" + m->b->label() + "' is planned as a slice of no Concat of its group");
      } else if (std::count_if(n->inputs.begin(), n->inputs.end(), [&](const Value* x) { return in_group(x, root); }) != 1 ||
                 std::none_of(n->inputs.begin(), n->inputs.end(), [&](const Value* x) {
                   return in_group(x, root) && member_of.at(x)->b->offset == m->b->offset;
                 })) {
        reject(where + ": '" + m->b->label() + "' is planned in place, but " + n->describe() +
               " does not read exactly one input at its bytes");
      } else if (std::any_of(n->implicit_inputs.begin(), n->implicit_inputs.end(),
                             [&](const Value* x) { return in_group(x, root); })) {
        reject(where + ": '" + m->b->label() + "' is planned in place, but the subgraphs of " + n->describe() +
               " read those bytes");
      }
      // A write: no member made before it, in the same bytes, is read afterwards.
      const uint64_t begin = m->b->offset, end = m->b->offset + m->b->size;
      for (const Member* other : group) {
        if (other == m || other->first > t) continue;
        if (other->b->offset >= end || other->b->offset + other->b->size <= begin) continue;
        if (g.owner == nullptr && other->value->is_graph_input)
          reject(where + ": '" + m->b->label() + "' is written in place over graph input '" + other->value->name + "'");
        if (other->end > t)
          reject(where + ": '" + m->b->label() + "' is written in place at step " + std::to_string(t) + " over '" +
                 other->b->label() + "', which is read until step " + std::to_string(other->end));
      }
    }
  return groups;
}

class Verifier {
 public:
  Verifier(const Model& m, const MemoryPlan& p) : model_(m), plan_(p) {}

  void run() {
    if (plan_.graphs.empty()) reject("the plan has no graphs");
    if (plan_.alignment == 0 || (plan_.alignment & (plan_.alignment - 1))) reject("alignment is not a power of two");
    // Pair IR graphs with plan graphs in the planner's order: pre-order, subgraphs in node order.
    for_each_graph(*model_.main, [&](Graph& g) { graphs_.push_back(&g); });
    if (graphs_.size() != plan_.graphs.size())
      reject("the plan has " + std::to_string(plan_.graphs.size()) + " graphs, the model " + std::to_string(graphs_.size()));
    for (size_t i = 0; i < graphs_.size(); ++i) {
      const GraphPlan& gp = plan_.graphs[i];
      const std::string owner = graphs_[i]->owner ? graphs_[i]->owner->name : "";
      if (gp.owner_node != owner || gp.owner_attribute != graphs_[i]->owner_attribute)
        reject("plan graph " + std::to_string(i) + " is not " + graphs_[i]->path());
      if (gp.num_steps != static_cast<int32_t>(graphs_[i]->nodes.size()))
        reject(graphs_[i]->path() + ": the plan has " + std::to_string(gp.num_steps) + " steps, the graph " +
               std::to_string(graphs_[i]->nodes.size()) + " nodes");
    }
    if (plan_.graphs[0].frame_bytes > plan_.arena_bytes) reject("the main frame is larger than the arena");
    verify_dynamic();
    for (size_t i = 0; i < graphs_.size(); ++i) verify_graph(*graphs_[i], plan_.graphs[i]);
  }

 private:
  // Dynamic tensors live outside the arena: the plan lists exactly the IR's, each with its graph
  // (so the session allocates each one), and places none of them.
  void verify_dynamic() {
    std::map<std::pair<int32_t, int32_t>, int> listed;
    for (const auto& d : plan_.dynamic_tensors) ++listed[{d.graph, d.value}];
    for (size_t gi = 0; gi < graphs_.size(); ++gi) {
      const Graph& g = *graphs_[gi];
      for (size_t i = 0; i < g.values.size(); ++i) {
        const Value& v = *g.values[i];
        if (!v.dynamic) continue;
        if (listed[{static_cast<int32_t>(gi), static_cast<int32_t>(i)}]-- != 1)
          reject(g.path() + ": dynamic tensor '" + v.name + "' is not listed once in the plan");
        for (const auto& b : plan_.graphs[gi].buffers)
          if (b.kind == BufferKind::Tensor && b.value == static_cast<int32_t>(i))
            reject(g.path() + ": dynamic tensor '" + v.name + "' has arena memory in the plan");
      }
    }
    for (const auto& d : plan_.dynamic_tensors)
      if (listed[{d.graph, d.value}] > 0) reject("the plan lists '" + d.name + "' as dynamic, the model does not");
  }

  void check_placement(const PlannedBuffer& b, uint64_t base, uint64_t limit, const std::string& where) {
    if ((base + b.offset) % plan_.alignment != 0) reject(where + ": buffer '" + b.label() + "' is misaligned");
    if (b.offset > limit || b.size > limit - b.offset)
      reject(where + ": buffer '" + b.label() + "' ends past its frame (" + std::to_string(limit) + " bytes)");
  }

  // With external inputs, a main-graph input's group is in the caller's bytes: the input at their
  // start and views of it (verify_groups has checked that each view is a view op's output over a
  // member at its bytes, and that nothing writes in place over an input). No other group is.
  // True when the group is external (and so takes no bytes of the frame).
  bool verify_external(const Graph& g, const PlannedBuffer& root, const std::vector<const Member*>& group,
                       const std::string& where) const {
    const auto own = std::find_if(group.begin(), group.end(), [&](const Member* m) { return m->b == &root; });
    const Value* v = own == group.end() ? nullptr : (*own)->value;
    const bool input = !g.owner && v && v->is_graph_input && !v->producer;
    const bool external = plan_.external_inputs && input;
    if (root.external != external)
      reject(where + ": '" + root.label() + "' is " + (root.external ? "" : "not ") + "planned in the caller's bytes, but " +
             (external ? "the plan's inputs are external" : input ? "the plan's inputs are in the arena" : "it is no main-graph input"));
    for (const Member* m : group) {
      if (m->b->external != external)
        reject(where + ": '" + m->b->label() + "' and its group's root '" + root.label() + "' disagree on being in the caller's bytes");
      if (external && (m->b->bound_output >= 0 || (m->b != &root && m->b->alias != AliasKind::View)))
        reject(where + ": '" + m->b->label() + "' is in the caller's bytes, but is not a view of input '" + root.name + "'");
    }
    if (external && root.offset != 0) reject(where + ": external input '" + root.label() + "' does not start its bytes");
    return external;
  }

  // A storage group in the bytes of the If output that branch output k (= root.bound_output) is
  // written into: k is such an output, written by a node that reads exactly one member, after
  // every other read of the group (so the group dies there, as an in-place write needs), and the
  // group fits in the If output. (Loading checks that the node's kernel may write in place.)
  void verify_in_if_output(const Graph& g, const PlannedBuffer& root, const std::vector<const Member*>& group,
                           const std::string& where) {
    const auto k = static_cast<size_t>(root.bound_output);
    if (!g.owner || g.owner->op_type != "If" || k >= g.outputs.size() || !plan::is_bound_output(g, g.outputs[k]))
      reject(where + ": '" + root.label() + "' is placed in an If output, but branch output " + std::to_string(k) +
             " is not written into one");
    const Value* y = g.outputs[k];
    const Port p = ControlFlowPorts(*g.owner).body_output(k);
    const Value* out = g.owner->outputs[static_cast<size_t>(p.node_port)];
    if (root.size > align_up(out->capacity_bytes, plan_.alignment, "If output"))
      reject(where + ": '" + root.label() + "' (" + std::to_string(root.size) + " bytes) does not fit in If output '" +
             out->name + "'");
    const Node& w = *y->producer;
    const auto step = steps_of(g).at(&w);
    size_t read = 0;
    for (const Member* m : group) {
      if (m->b->offset > root.size || m->b->size > root.size - m->b->offset)
        reject(where + ": '" + m->b->label() + "' does not lie on the bytes of its group");
      const auto reads = static_cast<size_t>(std::count(w.inputs.begin(), w.inputs.end(), m->value));
      if (reads > 0 && m->b->offset != 0)
        reject(where + ": " + w.describe() + " writes '" + y->name + "' over '" + m->b->label() +
               "', which does not start the If output's bytes");
      read += reads;
      if (std::count(w.implicit_inputs.begin(), w.implicit_inputs.end(), m->value) || m->end > step)
        reject(where + ": '" + m->b->label() + "' is read after " + w.describe() + " writes '" + y->name +
               "' over its bytes");
    }
    if (read != 1)
      reject(where + ": " + w.describe() + " writes '" + y->name + "' in place, but does not read exactly one input in "
             "those bytes");
  }

  // Each tensor buffer's value, by index: every value that needs memory of the frame has exactly
  // one buffer, and no buffer holds anything else.
  std::unordered_map<const Value*, const PlannedBuffer*> tensor_buffers(const Graph& g, const GraphPlan& gp) {
    std::unordered_map<const Value*, const PlannedBuffer*> of;
    for (const PlannedBuffer& b : gp.buffers) {
      if (b.kind != BufferKind::Tensor) continue;
      if (b.value < 0 || static_cast<size_t>(b.value) >= g.values.size())
        reject(g.path() + ": buffer '" + b.label() + "' names value " + std::to_string(b.value) + ", which the graph does not have");
      const Value* v = g.values[static_cast<size_t>(b.value)].get();
      if (!of.emplace(v, &b).second) reject(g.path() + ": tensor '" + v->name + "' has two buffers");
    }
    return of;
  }

  void verify_graph(const Graph& g, const GraphPlan& gp) {
    const std::string where = g.path();
    const uint64_t base = gp.base_offset;
    if (base > plan_.arena_bytes || gp.frame_bytes > plan_.arena_bytes - base) reject(where + ": the frame leaves the arena");
    const auto last = last_reads(g);
    const auto step = steps_of(g);
    const int64_t final_step = std::max<int64_t>(static_cast<int64_t>(g.nodes.size()) - 1, 0);
    auto buffers = tensor_buffers(g, gp);

    std::vector<Use> uses;
    auto add = [&](const PlannedBuffer& b, int64_t first, int64_t lastt) {
      check_placement(b, base, gp.frame_bytes, where);
      uses.push_back({base + b.offset, base + b.offset + b.size, first, lastt, "'" + b.label() + "'"});
    };
    std::vector<Member> members;
    // Values needing memory of this frame, with lifetimes from the IR.
    const bool main = g.owner == nullptr;
    for (const auto& v : g.values) {
      if (v->constant || v->dynamic) continue;
      if (!main && (v->is_graph_input || !v->producer)) continue;
      if (plan::is_bound_output(g, v.get())) continue;
      auto it = buffers.find(v.get());
      if (it == buffers.end()) reject(where + ": '" + v->name + "' has no buffer in the plan");
      const PlannedBuffer& b = *it->second;
      buffers.erase(it);
      if (b.size < v->capacity_bytes) reject(where + ": buffer '" + v->name + "' is smaller than the tensor");
      const int64_t first = v->producer ? step.at(v->producer) : 0;
      int64_t end = std::max(first, last.count(v.get()) ? last.at(v.get()) : first);
      if (main && v->is_graph_output) end = final_step;
      members.push_back({v.get(), &b, static_cast<size_t>(&b - gp.buffers.data()), first, end});
    }
    // A storage group is one use of its root's bytes, once its aliases are shown to be safe.
    std::set<int32_t> in_if_outputs;
    for (const auto& [root, group] : verify_groups(g, gp, members)) {
      if (verify_external(g, gp.buffers[root], group, where)) continue;  // the caller's bytes, not the frame's
      if (gp.buffers[root].bound_output >= 0) {
        if (!in_if_outputs.insert(gp.buffers[root].bound_output).second)
          reject(where + ": two storage groups are placed in the If output of branch output " +
                 std::to_string(gp.buffers[root].bound_output));
        verify_in_if_output(g, gp.buffers[root], group, where);
        continue;  // the If output's bytes, not the frame's
      }
      int64_t first = INT64_MAX, end = INT64_MIN;
      for (const Member* m : group) {
        first = std::min(first, m->first);
        end = std::max(end, m->end);
        check_placement(*m->b, base, gp.frame_bytes, where);
      }
      add(gp.buffers[root], first, end);
    }
    if (!buffers.empty()) reject(where + ": '" + buffers.begin()->second->label() + "' has a buffer but needs none");
    // A scratchpad or region lives at its node's step only; a node has one scratchpad at most (the
    // runtime gives the kernel the one it finds).
    std::vector<int> scratchpads(g.nodes.size(), 0);
    for (const PlannedBuffer& b : gp.buffers) {
      if (b.kind == BufferKind::Tensor) continue;
      if (!b.in_frame()) reject(where + ": '" + b.label() + "' is a " + (b.external ? "scratchpad or region in the caller's bytes" : "scratchpad or region in an If output"));
      if (b.node < 0 || static_cast<size_t>(b.node) >= g.nodes.size() || b.first != b.node || b.last != b.node)
        reject(where + ": '" + b.label() + "' is not live at its node's step only");
      const Node& n = *g.nodes[static_cast<size_t>(b.node)];
      if (b.kind == BufferKind::Region && !n.is_control_flow())
        reject(where + ": region '" + b.label() + "' is at step " + std::to_string(b.node) + ", where " + n.describe() +
               " has no subgraphs");
      if (b.kind == BufferKind::Scratchpad && ++scratchpads[static_cast<size_t>(b.node)] > 1)
        reject(where + ": " + n.describe() + " has two scratchpads in the plan");
      add(b, b.node, b.node);
    }
    check_disjoint(uses, where);
    // Every control-flow node has one region (the executor finds its frames and slots there).
    std::vector<int> regions(g.nodes.size(), 0);
    for (const Region& r : gp.regions) {
      if (r.step < 0 || static_cast<size_t>(r.step) >= g.nodes.size())
        reject(where + ": region of '" + r.node + "' is at step " + std::to_string(r.step) + ", past the graph's nodes");
      ++regions[static_cast<size_t>(r.step)];
    }
    for (size_t t = 0; t < g.nodes.size(); ++t)
      if (regions[t] != (g.nodes[t]->is_control_flow() ? 1 : 0))
        reject(where + ": " + g.nodes[t]->describe() + " at step " + std::to_string(t) + " has " +
               std::to_string(regions[t]) + " regions in the plan");
    for (const Region& r : gp.regions) verify_region(g, gp, r);
  }

  // A region holds its subgraphs' frames (If branches over each other) and, after the body frame,
  // the loop slots. A Loop/Scan body is walked over three iterations with its slots.
  void verify_region(const Graph& g, const GraphPlan& gp, const Region& r) {
    if (r.buffer < 0 || static_cast<size_t>(r.buffer) >= gp.buffers.size() ||
        gp.buffers[static_cast<size_t>(r.buffer)].kind != BufferKind::Region)
      reject(g.path() + ": region of '" + r.node + "' has no region buffer");
    const PlannedBuffer& rb = gp.buffers[static_cast<size_t>(r.buffer)];
    if (r.step != rb.node) reject(g.path() + ": region of '" + r.node + "' is not at its buffer's step");
    const Node& n = *g.nodes[static_cast<size_t>(r.step)];
    const uint64_t region_at = gp.base_offset + rb.offset;
    if (r.subgraphs.size() != n.subgraphs.size())
      reject(g.path() + ": region of '" + r.node + "' holds " + std::to_string(r.subgraphs.size()) + " graphs, " +
             n.describe() + " has " + std::to_string(n.subgraphs.size()));
    for (size_t k = 0; k < r.subgraphs.size(); ++k) {
      const int32_t s = r.subgraphs[k];
      if (s <= 0 || static_cast<size_t>(s) >= plan_.graphs.size() ||
          graphs_[static_cast<size_t>(s)] != n.subgraphs[k].get())
        reject(g.path() + ": region of '" + r.node + "' names a graph that is not its node's");
      const GraphPlan& sp = plan_.graphs[static_cast<size_t>(s)];
      if (sp.base_offset != region_at) reject(sp.path + ": frame does not start at its region");
      if (sp.frame_bytes > rb.size) reject(sp.path + ": frame is larger than its region");
    }
    if (n.op_type != "Loop" && n.op_type != "Scan") {
      if (!r.carried.empty()) reject(g.path() + ": region of '" + r.node + "' has loop slots, but its node is no loop");
      return;
    }
    for (size_t k = 0; k < n.subgraphs.size(); ++k)
      if (n.subgraphs[k]->owner_attribute == "body")
        verify_loop_slots(rb, r, plan_.graphs[static_cast<size_t>(r.subgraphs[k])], *n.subgraphs[k], region_at);
  }

  void verify_loop_slots(const PlannedBuffer& rb, const Region& r, const GraphPlan& body_plan, const Graph& body,
                         uint64_t region_at) {
    const ControlFlowPorts ports(*body.owner);
    const auto last = last_reads(body);
    const auto step = steps_of(body);
    const int64_t steps = std::max<int64_t>(static_cast<int64_t>(body.nodes.size()), 1);
    constexpr int kIterations = 3;

    std::vector<int> seen(ports.slots(), 0);
    for (const CarriedSlots& c : r.carried)
      if (c.slot >= 0 && static_cast<size_t>(c.slot) < seen.size()) ++seen[static_cast<size_t>(c.slot)];
    if (r.carried.size() != seen.size() || std::count(seen.begin(), seen.end(), 1) != static_cast<long>(seen.size()))
      reject(body.path() + ": the plan must give each of the " + std::to_string(seen.size()) + " loop slots of '" + r.node +
             "' once");
    std::vector<Use> uses;
    // A storage group is one use of its root's bytes (verify_graph has checked its aliases).
    std::vector<std::pair<int64_t, int64_t>> life;
    for (const auto& b : body_plan.buffers) life.emplace_back(b.first, b.last);
    for (const auto& b : body_plan.buffers)
      if (b.group >= 0 && static_cast<size_t>(b.group) < life.size()) {
        auto& [first, end] = life[static_cast<size_t>(b.group)];
        first = std::min<int64_t>(first, b.first);
        end = std::max<int64_t>(end, b.last);
      }
    for (int k = 0; k < kIterations; ++k)
      for (size_t i = 0; i < body_plan.buffers.size(); ++i) {
        const auto& b = body_plan.buffers[i];
        if (b.group >= 0) continue;
        uses.push_back({region_at + b.offset, region_at + b.offset + b.size, k * steps + life[i].first,
                        k * steps + life[i].second, "body buffer '" + b.label() + "' (iteration " + std::to_string(k) + ")"});
      }
    for (const CarriedSlots& c : r.carried) {
      if (c.slot < 0 || static_cast<size_t>(c.slot) >= ports.slots() || ports.body_input_of_slot(c.slot) >= body.inputs.size())
        reject(body.path() + ": the plan has a slot " + std::to_string(c.slot) + " that '" + r.node + "' does not have");
      const Value* in = body.inputs[ports.body_input_of_slot(c.slot)];
      if (c.size < in->capacity_bytes) reject(body.path() + ": slot of '" + in->name + "' is smaller than the value");
      const int64_t o = ports.body_output_of_slot(c.slot);
      const Value* out = o >= 0 && static_cast<size_t>(o) < body.outputs.size() ? body.outputs[static_cast<size_t>(o)] : nullptr;
      verify_slot_home(r, c, body, in, out, step);
      // The Loop's output (the parent's bytes, live at its step), or the session's memory.
      if (!in_region(c.home)) continue;
      const uint64_t size = (c.size + plan_.alignment - 1) / plan_.alignment * plan_.alignment;
      for (uint64_t slot : {c.slot0, c.slot1})
        if (slot < body_plan.frame_bytes || slot > rb.size || size > rb.size - slot)
          reject(body.path() + ": slot of '" + c.name + "' lies outside the region after the body frame");
      if (c.home == SlotHome::OneSlot) {  // the counter, or a value updated in place: live throughout
        uses.push_back({region_at + c.slot0, region_at + c.slot0 + size, 0, kIterations * steps, "slot of '" + c.name + "'"});
        continue;
      }
      // Iteration k writes slot k%2 when the body output of that slot is made, and iteration k+1
      // reads it until its body input's last read.
      const int64_t written = out && out->producer && out->graph == &body ? step.at(out->producer) : steps - 1;
      const int64_t read_until = last.count(in) ? last.at(in) : 0;
      for (int k = 0; k < kIterations; ++k) {
        const uint64_t slot = k % 2 == 0 ? c.slot0 : c.slot1;
        uses.push_back({region_at + slot, region_at + slot + size, k * steps + written, (k + 1) * steps + read_until,
                        "slot " + std::to_string(k % 2) + " of '" + c.name + "' (written in iteration " + std::to_string(k) + ")"});
      }
    }
    check_disjoint(uses, body.path());
  }

  // A slot's home, checked against the IR: one slot for the counter (the executor writes it) or
  // for a value whose update is written over its read; the Loop's output only for a Loop's
  // carried value with an output of its own. In place means: the update's node reads the value
  // once, and no body node reads it at or after that node.
  void verify_slot_home(const Region& r, const CarriedSlots& c, const Graph& body, const Value* in, const Value* out,
                        const std::unordered_map<const Node*, int64_t>& step) const {
    const ControlFlowPorts ports(*body.owner);
    const Port p = ports.body_input(ports.body_input_of_slot(c.slot));
    const std::string what = body.path() + ": slot of '" + in->name + "'";
    if (c.home > SlotHome::Dynamic) reject(what + " has an unknown home");
    if ((c.home == SlotHome::Dynamic) != (p.kind == Port::Kind::Carried && ports.is_loop() && in->dynamic))
      reject(what + (c.home == SlotHome::Dynamic ? ": only a Loop's dynamic carried value is kept outside the region"
                                                 : ": a dynamic carried value has no slot of the region"));
    if (c.home == SlotHome::Dynamic) return;
    if (p.kind == Port::Kind::Counter) {
      if (c.home != SlotHome::OneSlot || c.slot0 != c.slot1 || c.writer != -1)
        reject(what + ": the iteration counter has one slot, written by the executor");
      return;
    }
    if (c.home == SlotHome::TwoSlots) {
      if (c.slot0 == c.slot1) reject(what + ": its two slots are the same bytes");
      if (c.writer != -1) reject(what + ": a value in two slots is updated in place by no node");
      return;
    }
    if (c.home == SlotHome::OneSlot && c.slot0 != c.slot1) reject(what + ": one slot at two offsets");
    if (p.kind != Port::Kind::Carried || c.writer < 0 || static_cast<size_t>(c.writer) >= body.nodes.size())
      reject(what + " is updated in place by no node of the body");
    const Node& w = *body.nodes[static_cast<size_t>(c.writer)];
    if (!out || out->producer != &w || !plan::is_bound_output(body, out))
      reject(what + ": '" + w.name + "' does not write the body's update of it into the slot");
    if (std::count(w.inputs.begin(), w.inputs.end(), in) != 1 ||
        std::count(w.implicit_inputs.begin(), w.implicit_inputs.end(), in) != 0)
      reject(what + ": '" + w.name + "' must read it exactly once to update it in place");
    for (const Node* reader : in->consumers)
      if (reader != &w && step.at(reader) >= c.writer)
        reject(what + ": '" + reader->name + "' reads it after '" + w.name + "' writes over it");
    if (c.home == SlotHome::NodeOutput) {
      const Node& n = *body.owner;
      const Value* y = ports.is_loop() && p.index < n.outputs.size() ? n.outputs[p.index] : nullptr;
      if (!y || y->dynamic || y->constant || y->capacity_bytes < c.size)
        reject(what + ": '" + r.node + "' has no output in the arena to keep it in");
    }
  }

  const Model& model_;
  const MemoryPlan& plan_;
  std::vector<const Graph*> graphs_;
};

}  // namespace

void verify_plan(const Model& model, const MemoryPlan& plan) { Verifier(model, plan).run(); }

}  // namespace memplan
