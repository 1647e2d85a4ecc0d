#include "plan/planner.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "ir/control_flow_ports.h"
#include "memplan/error.h"
#include "plan/lifetimes.h"
#include "plan/loop_state.h"
#include "util/checked.h"

namespace memplan {

uint64_t aligned_capacity(uint64_t bytes, uint64_t alignment) { return align_up(bytes, alignment, "buffer size"); }

namespace {

using plan::BufferRequest;
using plan::LocalBuffer;
using plan::Strategy;

struct GraphResult {
  uint64_t frame = 0;        // bytes of this graph's frame
  uint64_t lower_bound = 0;  // recursive lower bound, every tensor its own bytes
  uint64_t aliased_bound = 0;  // the same over storage groups
  uint64_t naive = 0;        // every buffer of this graph and its subgraphs its own bytes
  uint64_t separate = 0;     // every graph its own memory: own frame without regions, plus subgraphs
};

// A control-flow node's region while its graph is planned.
struct RegionInfo {
  size_t buffer;  // index into the graph's buffers
  const Node* node;
  std::vector<int32_t> subgraphs;
  std::vector<plan::CarriedValue> carried;
  uint64_t body_frame;
};

// What one graph asks of its frame: its tensors, then a region per control-flow node and a
// scratchpad per kernel that needs one, in step order. `region_lb` is each buffer's size for the
// lower bound (a region's counts its subgraphs' lower bounds, not their frames); `region_alb` the
// same for the bound over storage groups.
struct GraphBuffers {
  std::vector<LocalBuffer> locals;
  std::vector<uint64_t> region_lb, region_alb;
  std::vector<RegionInfo> regions;
  uint64_t slots = 0;  // bytes of every loop slot of this graph's regions
};

// Placement of one graph's requests with one strategy, or with the smallest of all (Auto).
struct Chosen {
  plan::Placement placement;
  Strategy strategy;
  std::map<std::string, uint64_t> bytes_by_strategy;  // filled for Auto
};

Chosen place(Strategy strategy, const std::vector<BufferRequest>& requests, uint64_t alignment) {
  if (strategy != Strategy::Auto) return {plan::plan(strategy, requests, alignment), strategy, {}};
  Chosen best{{}, Strategy::Auto, {}};
  bool have = false;
  for (Strategy s : plan::concrete_strategies()) {
    plan::Placement p = plan::plan(s, requests, alignment);
    best.bytes_by_strategy[std::string(plan::strategy_name(s))] = p.frame_bytes;
    if (!have || p.frame_bytes < best.placement.frame_bytes) {
      best.placement = std::move(p);
      best.strategy = s;
      have = true;
    }
  }
  return best;
}

// What the strategies place: one request per storage group (live for the union of its members,
// as large as its root) and per region and scratchpad. `unit[i]` is local buffer i's request
// (kNoUnit for a group in an If output's bytes or the caller's).
constexpr size_t kNoUnit = SIZE_MAX;
struct Units {
  std::vector<BufferRequest> requests, lb_requests;
  std::vector<size_t> unit;
};

Units units_of(const GraphBuffers& buffers, const plan::StorageGroups& groups) {
  const auto& locals = buffers.locals;
  Units u;
  u.unit.assign(locals.size(), kNoUnit);
  auto outside = [&](size_t root) { return groups.bound_output[root] >= 0 || groups.external[root]; };
  for (size_t i = 0; i < locals.size(); ++i) {
    if (groups.root[i] != i || outside(i)) continue;  // not placed: in an If output or the caller's bytes
    u.unit[i] = u.requests.size();
    const bool region = locals[i].kind == LocalBuffer::Kind::Region;
    u.requests.push_back({locals[i].size, locals[i].first, locals[i].last});
    u.lb_requests.push_back({region ? buffers.region_alb[i] : locals[i].size, locals[i].first, locals[i].last});
  }
  for (size_t i = 0; i < locals.size(); ++i) {
    if (groups.root[i] == i || outside(groups.root[i])) continue;
    const size_t k = u.unit[i] = u.unit[groups.root[i]];
    for (auto* r : {&u.requests[k], &u.lb_requests[k]}) {
      r->first = std::min(r->first, locals[i].first);
      r->last = std::max(r->last, locals[i].last);
    }
  }
  return u;
}

// A node's step in its graph.
int32_t step_in(const Node& x) {
  const auto& nodes = x.graph->nodes;
  for (size_t t = 0; t < nodes.size(); ++t)
    if (nodes[t].get() == &x) return static_cast<int32_t>(t);
  return -1;
}

class Planner {
 public:
  Planner(const PlanOptions& o, MemoryPlan* out) : opts_(o), out_(out) {}

  // Plans g with `strategy` (Auto: the smallest per graph); records into the plan when recording.
  GraphResult plan_graph(const Graph& g, Strategy strategy, int32_t parent) {
    const int32_t index = out_ ? static_cast<int32_t>(out_->graphs.size()) : -1;
    if (out_) out_->graphs.emplace_back();
    GraphResult result;
    const GraphBuffers buffers = collect(g, strategy, index, result);
    auto [groups, units, chosen] = group_and_place(g, buffers, strategy);

    std::vector<BufferRequest> lb_requests, own_requests;
    for (size_t i = 0; i < buffers.locals.size(); ++i) {
      const LocalBuffer& b = buffers.locals[i];
      if (groups.external[i]) continue;  // an external input: the caller's bytes in every plan
      const bool region = b.kind == LocalBuffer::Kind::Region;
      lb_requests.push_back({region ? buffers.region_lb[i] : b.size, b.first, b.last});
      if (!region) {
        own_requests.push_back({b.size, b.first, b.last});
        result.naive = checked_add(result.naive, aligned(b.size), "plan");
      }
    }
    result.naive = checked_add(result.naive, buffers.slots, "plan");
    result.lower_bound = plan::lower_bound(lb_requests, opts_.alignment);
    result.aliased_bound = plan::lower_bound(units.lb_requests, opts_.alignment);

    result.frame = chosen.placement.frame_bytes;
    const Strategy own = chosen.strategy == Strategy::Auto ? Strategy::GreedyBySize : chosen.strategy;
    const uint64_t own_frame = plan::plan(own, own_requests, opts_.alignment).frame_bytes;
    result.separate = checked_add(result.separate, checked_add(own_frame, buffers.slots, "plan"), "plan");

    if (out_) {
      GraphPlan& gp = out_->graphs[static_cast<size_t>(index)];
      gp.strategy_bytes = std::move(chosen.bytes_by_strategy);
      gp.refused_aliases = groups.refused;
      record(g, index, parent, buffers, groups, units, chosen.placement, result);
    }
    return result;
  }

 private:
  uint64_t aligned(uint64_t size) const { return align_up(size, opts_.alignment, "buffer size"); }

  struct Grouped {
    plan::StorageGroups groups;
    Units units;
    Chosen chosen;
  };

  Grouped grouped(const Graph& g, const GraphBuffers& buffers, Strategy strategy,
                  const plan::GroupOptions& options) const {
    Grouped out;
    out.groups = plan::find_storage_groups(g, buffers.locals, opts_.aliasing, options);
    out.units = units_of(buffers, out.groups);
    out.chosen = place(strategy, out.units.requests, opts_.alignment);
    return out;
  }

  // Storage groups and their placement. A concatenation in place keeps its inputs' bytes from
  // the first one's producer to the output's last reader, which can raise the peak: each chain
  // of concatenations (by the Concat at its root) is left out in turn, and kept out where that
  // makes the frame smaller; the refusal says by how much.
  Grouped group_and_place(const Graph& g, const GraphBuffers& buffers, Strategy strategy) const {
    plan::GroupOptions options{opts_.alignment, true, {}, bound_outputs_of(g), opts_.external_inputs};
    Grouped best = grouped(g, buffers, strategy, options);
    std::vector<const Node*> roots;  // Concats whose output holds slices, in step order
    for (size_t i = 0; i < buffers.locals.size(); ++i)
      if (best.groups.kind[i] == AliasKind::ConcatSlice) {
        const Node* c = buffers.locals[best.groups.root[i]].value->producer;
        if (c && std::find(roots.begin(), roots.end(), c) == roots.end()) roots.push_back(c);
      }
    std::vector<RefusedAlias> why;
    for (const Node* c : roots) {
      plan::GroupOptions fewer = options;
      fewer.copied_concats.insert(c);
      Grouped other = grouped(g, buffers, strategy, fewer);
      spdlog::debug("{}: copying {} instead of concatenating in place: frame {} (was {})", g.path(), c->name,
                    other.chosen.placement.frame_bytes, best.chosen.placement.frame_bytes);
      if (other.chosen.placement.frame_bytes >= best.chosen.placement.frame_bytes) continue;
      why.push_back({c->outputs[0]->name, c->inputs[0] ? c->inputs[0]->name : "", c->name,
                     "concatenation in place would raise this graph's frame from " +
                         std::to_string(other.chosen.placement.frame_bytes) + " to " +
                         std::to_string(best.chosen.placement.frame_bytes) + " bytes"});
      options = std::move(fewer);
      best = std::move(other);
    }
    best.groups.refused.insert(best.groups.refused.end(), why.begin(), why.end());
    // The strategies are heuristics: a group's longer life can make them place worse than with
    // no sharing at all, and sharing must never cost bytes.
    if (opts_.aliasing) {
      Grouped none;
      none.groups = plan::find_storage_groups(g, buffers.locals, {}, options);
      none.units = units_of(buffers, none.groups);
      none.chosen = place(strategy, none.units.requests, opts_.alignment);
      if (none.chosen.placement.frame_bytes < best.chosen.placement.frame_bytes) {
        none.groups.refused.push_back({"", "", "", "sharing storage would raise this graph's frame from " +
                                                       std::to_string(none.chosen.placement.frame_bytes) + " to " +
                                                       std::to_string(best.chosen.placement.frame_bytes) +
                                                       " bytes: every tensor keeps bytes of its own"});
        return none;
      }
    }
    return best;
  }

  // g's buffers; plans each control-flow node's subgraphs on the way (adding their costs to
  // `result`), since a region's size is its largest subgraph frame plus its loop slots.
  GraphBuffers collect(const Graph& g, Strategy strategy, int32_t index, GraphResult& result) {
    GraphBuffers out;
    out.locals = plan::tensor_buffers(g);
    out.region_lb.assign(out.locals.size(), 0);
    out.region_alb.assign(out.locals.size(), 0);
    for (size_t t = 0; t < g.nodes.size(); ++t) {
      const Node& n = *g.nodes[t];
      const auto step = static_cast<int32_t>(t);
      if (n.is_control_flow()) add_region(n, step, strategy, index, out, result);
      const uint64_t scratch = opts_.scratchpad_bytes ? opts_.scratchpad_bytes(n) : 0;
      if (scratch > 0) {
        out.locals.push_back({nullptr, &n, LocalBuffer::Kind::Scratchpad, scratch, step, step});
        out.region_lb.push_back(0);
        out.region_alb.push_back(0);
      }
    }
    return out;
  }

  void add_region(const Node& n, int32_t step, Strategy strategy, int32_t index, GraphBuffers& out,
                  GraphResult& result) {
    RegionInfo info{out.locals.size(), &n, {}, plan::carried_values(n), 0};
    uint64_t frame = 0, lb = 0, alb = 0;
    for (const auto& sub : n.subgraphs) {
      if (out_) info.subgraphs.push_back(static_cast<int32_t>(out_->graphs.size()));
      const GraphResult r = plan_graph(*sub, strategy, index);
      frame = std::max(frame, r.frame);
      lb = std::max(lb, r.lower_bound);
      alb = std::max(alb, r.aliased_bound);
      result.naive = checked_add(result.naive, r.naive, "plan");
      result.separate = checked_add(result.separate, r.separate, "plan");
    }
    info.body_frame = frame;
    // Every value in two slots (the counter in one) for the bounds without aliasing; loop state
    // in place for the region itself and the bound with it.
    const uint64_t own_slots = slot_bytes(info.carried);
    if (opts_.aliasing) place_loop_state(n, info);
    const uint64_t slots = slot_bytes(info.carried);
    out.slots = checked_add(out.slots, own_slots, "slots");
    out.locals.push_back({nullptr, &n, LocalBuffer::Kind::Region, checked_add(frame, slots, "region"), step, step});
    out.region_lb.push_back(checked_add(lb, own_slots, "region"));
    out.region_alb.push_back(checked_add(alb, slots, "region"));
    out.regions.push_back(std::move(info));
  }

  uint64_t slot_bytes(const std::vector<plan::CarriedValue>& carried) const {
    uint64_t bytes = 0;
    for (const auto& c : carried) bytes = checked_add(bytes, checked_mul(c.slots(), aligned(c.size), "slot"), "slots");
    return bytes;
  }

  // Loop state in place; the body's refusals say why a value keeps two slots, and lose the
  // refusal of an update the loop does in place after all (its input is the enclosing graph's).
  void place_loop_state(const Node& n, RegionInfo& info) const {
    std::vector<RefusedAlias> why;
    plan::place_loop_state(n, opts_.aliasing, info.carried, why);
    if (!out_ || info.subgraphs.empty()) return;
    auto& refused = out_->graphs[static_cast<size_t>(info.subgraphs.front())].refused_aliases;
    for (const auto& c : info.carried)
      if (c.writer)
        std::erase_if(refused, [&](const RefusedAlias& r) {
          return r.node == c.writer->name && r.value == c.body_output->name && r.source == c.body_input->name;
        });
    refused.insert(refused.end(), why.begin(), why.end());
  }

  void record(const Graph& g, int32_t index, int32_t parent, const GraphBuffers& buffers,
              const plan::StorageGroups& groups, const Units& units, const plan::Placement& placement,
              const GraphResult& result) {
    GraphPlan& gp = out_->graphs[static_cast<size_t>(index)];
    gp.parent = parent;
    gp.owner_node = g.owner ? g.owner->name : "";
    gp.owner_attribute = g.owner_attribute;
    gp.path = g.path();
    gp.frame_bytes = result.frame;
    gp.lower_bound_bytes = result.lower_bound;
    gp.aliased_bound_bytes = result.aliased_bound;
    gp.naive_bytes = result.naive;
    gp.num_steps = static_cast<int32_t>(g.nodes.size());
    std::unordered_map<const Value*, int32_t> value_index;
    for (size_t i = 0; i < g.values.size(); ++i) value_index[g.values[i].get()] = static_cast<int32_t>(i);
    std::unordered_map<const Node*, int32_t> step;
    for (size_t t = 0; t < g.nodes.size(); ++t) step[g.nodes[t].get()] = static_cast<int32_t>(t);
    for (size_t i = 0; i < buffers.locals.size(); ++i) {
      const LocalBuffer& b = buffers.locals[i];
      PlannedBuffer pb;
      switch (b.kind) {
        case LocalBuffer::Kind::Tensor:
          pb.kind = BufferKind::Tensor;
          pb.value = value_index.at(b.value);
          pb.name = b.value->name;
          pb.upper_bound = b.value->shape_varies;
          break;
        case LocalBuffer::Kind::Region: pb.kind = BufferKind::Region; break;
        case LocalBuffer::Kind::Scratchpad: pb.kind = BufferKind::Scratchpad; break;
      }
      if (b.node) {
        pb.node = step.at(b.node);
        pb.producer = b.node->name;
        if (pb.kind != BufferKind::Tensor) pb.name = b.node->name;
      }
      pb.size = aligned(b.size);
      pb.bound_output = groups.bound_output[groups.root[i]];
      pb.external = groups.external[groups.root[i]];
      pb.offset = (pb.in_frame() ? placement.offsets[units.unit[i]] : 0) + groups.offset[i];
      if (groups.root[i] != i) pb.group = static_cast<int32_t>(groups.root[i]);
      pb.alias = groups.kind[i];
      pb.first = b.first;
      pb.last = b.last;
      gp.buffers.push_back(std::move(pb));
    }
    for (const auto& r : buffers.regions) gp.regions.push_back(region_of(r, buffers.locals[r.buffer].first));
    if (g.owner) gp.bindings = bindings_of(g);
  }

  Region region_of(const RegionInfo& r, int32_t step) const {
    Region pr;
    pr.node = r.node->name;
    pr.op_type = r.node->op_type;
    pr.step = step;
    pr.buffer = static_cast<int32_t>(r.buffer);
    pr.subgraphs = r.subgraphs;
    uint64_t at = r.body_frame;
    for (size_t k = 0; k < r.carried.size(); ++k) {
      const plan::CarriedValue& c = r.carried[k];
      CarriedSlots cs;
      cs.slot = static_cast<int32_t>(k);
      cs.name = c.body_input ? c.body_input->name : "";
      cs.size = c.size;
      cs.home = c.home;
      cs.writer = c.writer ? step_in(*c.writer) : -1;
      cs.grows = c.home != SlotHome::Dynamic && c.body_input && !c.body_input->type.is_static();
      if (in_region(c.home)) {
        cs.slot0 = at;
        at += aligned(c.size);
        cs.slot1 = c.home == SlotHome::OneSlot ? cs.slot0 : at;
        if (c.home == SlotHome::TwoSlots) at += aligned(c.size);
      }
      pr.carried.push_back(std::move(cs));
    }
    return pr;
  }

  // An If branch's outputs that are written straight into the If's outputs, with those outputs'
  // bytes: groups that die where such an output is written over them in place can live there.
  static std::map<const Value*, plan::BoundOutput> bound_outputs_of(const Graph& g) {
    std::map<const Value*, plan::BoundOutput> out;
    if (!g.owner || g.owner->op_type != "If") return out;
    const ControlFlowPorts ports(*g.owner);
    for (size_t k = 0; k < g.outputs.size(); ++k) {
      const Port p = ports.body_output(k);
      if (!plan::is_bound_output(g, g.outputs[k]) || p.node_port < 0) continue;
      out[g.outputs[k]] = {static_cast<int32_t>(k), g.owner->outputs[static_cast<size_t>(p.node_port)]->capacity_bytes};
    }
    return out;
  }

  // How g's inputs, captures and outputs are bound to its owner's memory.
  static std::vector<Binding> bindings_of(const Graph& g) {
    const Node& n = *g.owner;
    const ControlFlowPorts ports(n);
    std::vector<Binding> out;
    auto name_of = [](const std::vector<Value*>& values, int32_t at) {
      return at >= 0 && static_cast<size_t>(at) < values.size() && values[static_cast<size_t>(at)]
                 ? values[static_cast<size_t>(at)]->name
                 : std::string();
    };
    for (size_t k = 0; k < g.inputs.size(); ++k) {
      const Port p = ports.body_input(k);
      out.push_back({Binding::Kind::Input, g.inputs[k]->name, p.slot >= 0 ? "" : name_of(n.inputs, p.node_port), p.slot});
    }
    for (const Value* c : g.captures) out.push_back({Binding::Kind::Capture, c->name, c->name, -1});
    for (size_t k = 0; k < g.outputs.size(); ++k) {
      const Port p = ports.body_output(k);
      out.push_back({Binding::Kind::Output, g.outputs[k]->name, p.slot >= 0 ? "" : name_of(n.outputs, p.node_port), p.slot});
    }
    return out;
  }

  const PlanOptions& opts_;
  MemoryPlan* out_;
};

// Absolute frame bases, top-down: a subgraph's frame starts at its region's offset.
void assign_bases(MemoryPlan& plan) {
  for (const GraphPlan& g : plan.graphs)
    for (const Region& r : g.regions) {
      const uint64_t base = g.base_offset + g.buffers[static_cast<size_t>(r.buffer)].offset;
      for (int32_t s : r.subgraphs) plan.graphs[static_cast<size_t>(s)].base_offset = base;
    }
}

// The strategy the plan reports as kept: the one asked for, or under Auto the one whose whole-model
// arena is smallest (ties: by name), or "auto (per graph)" when choosing per graph did better.
std::string chosen_strategy(const MemoryPlan& plan, Strategy asked, uint64_t arena) {
  if (asked != Strategy::Auto) return std::string(plan::strategy_name(asked));
  std::string name;
  uint64_t best = UINT64_MAX;
  for (const auto& [n, bytes] : plan.strategy_bytes)
    if (bytes < best) {
      best = bytes;
      name = n;
    }
  return arena < best ? "auto (per graph)" : name;
}

void list_dynamic_tensors(const Model& model, MemoryPlan& plan) {
  int32_t graph_index = 0;  // plan.graphs is in for_each_graph's order
  for_each_graph(*model.main, [&](Graph& g) {
    for (size_t i = 0; i < g.values.size(); ++i) {
      const Value& v = *g.values[i];
      if (!v.dynamic) continue;
      plan.dynamic_tensors.push_back({graph_index, static_cast<int32_t>(i), v.name, v.producer ? v.producer->name : "",
                                      v.type.shape_string(), static_cast<int32_t>(v.type.dtype),
                                      v.type.is_container() ? container_name(v.type.container) : ""});
    }
    ++graph_index;
  });
}

}  // namespace

MemoryPlan plan_memory(const Model& model, const PlanOptions& options) {
  if (options.alignment == 0 || (options.alignment & (options.alignment - 1)) != 0)
    fail("alignment " + std::to_string(options.alignment) + " is not a power of two");
  MemoryPlan plan;
  for (Strategy s : plan::concrete_strategies()) {
    Planner measure(options, nullptr);
    plan.strategy_bytes[std::string(plan::strategy_name(s))] = measure.plan_graph(*model.main, s, -1).frame;
  }
  Planner planner(options, &plan);
  const GraphResult main = planner.plan_graph(*model.main, options.strategy, -1);
  assign_bases(plan);
  plan.alignment = options.alignment;
  plan.external_inputs = options.external_inputs;
  plan.strategy = std::string(plan::strategy_name(options.strategy));
  plan.arena_bytes = main.frame;
  plan.lower_bound_bytes = main.lower_bound;
  plan.aliased_bound_bytes = main.aliased_bound;
  plan.naive_bytes = main.naive;
  plan.per_subgraph_bytes = main.separate;
  plan.chosen_strategy = chosen_strategy(plan, options.strategy, main.frame);
  list_dynamic_tensors(model, plan);
  plan.weights_bytes = weights_bytes(model);
  return plan;
}

// An Identity of a weight shares its bytes: counted once.
uint64_t weights_bytes(const Model& model) {
  uint64_t weights = 0;
  std::unordered_set<const Tensor*> counted;
  for_each_graph(*model.main, [&](Graph& g) {
    for (const auto& v : g.values)
      if (v->constant && counted.insert(v->constant.get()).second)
        weights = checked_add(weights, v->constant->byte_size(), "weights");
  });
  return weights;
}

}  // namespace memplan
