#include "plan/planner.h"

#include <algorithm>

#include "memplan/error.h"
#include "plan/lifetimes.h"
#include "util/checked.h"

namespace memplan {

uint64_t aligned_capacity(uint64_t bytes, uint64_t alignment) { return align_up(bytes, alignment, "buffer size"); }

namespace {

using plan::BufferRequest;
using plan::LocalBuffer;
using plan::Strategy;

struct GraphResult {
  uint64_t frame = 0;        // bytes of this graph's frame
  uint64_t lower_bound = 0;  // recursive lower bound
  uint64_t naive = 0;        // every buffer of this graph and its subgraphs its own bytes
  uint64_t separate = 0;     // every graph its own memory: own frame without regions, plus subgraphs
};

class Planner {
 public:
  Planner(const PlanOptions& o, planfile::Plan* out) : opts_(o), out_(out) {}

  // Plans g with `strategy` (Auto: the smallest per graph); records into the plan when recording.
  GraphResult plan_graph(const Graph& g, Strategy strategy, int parent) {
    const int index = out_ ? out_->graphs_size() : -1;
    if (out_) out_->add_graphs();

    std::vector<LocalBuffer> locals = plan::tensor_buffers(g);
    GraphResult result;
    std::vector<uint64_t> region_lb(locals.size(), 0);
    struct RegionInfo {
      size_t buffer;
      const Node* node;
      std::vector<int> subgraphs;
      std::vector<plan::CarriedValue> carried;
      uint64_t body_frame;
    };
    std::vector<RegionInfo> regions;
    uint64_t slots_total = 0;

    for (size_t t = 0; t < g.nodes.size(); ++t) {
      const Node& n = *g.nodes[t];
      const auto step = static_cast<int32_t>(t);
      if (n.is_control_flow()) {
        RegionInfo info{locals.size(), &n, {}, plan::carried_values(n), 0};
        uint64_t frame = 0, lb = 0;
        for (const auto& sub : n.subgraphs) {
          if (out_) info.subgraphs.push_back(out_->graphs_size());
          GraphResult r = plan_graph(*sub, strategy, index);
          frame = std::max(frame, r.frame);
          lb = std::max(lb, r.lower_bound);
          result.naive = checked_add(result.naive, r.naive, "plan");
          result.separate = checked_add(result.separate, r.separate, "plan");
        }
        info.body_frame = frame;
        uint64_t slots = 0;
        for (const auto& c : info.carried)
          slots = checked_add(slots, checked_mul(c.single_slot ? 1 : 2, aligned(c.size), "slot"), "slots");
        slots_total = checked_add(slots_total, slots, "slots");
        locals.push_back({nullptr, &n, LocalBuffer::Kind::Region, checked_add(frame, slots, "region"), step, step});
        region_lb.push_back(checked_add(lb, slots, "region"));
        regions.push_back(std::move(info));
      }
      if (opts_.scratchpad_bytes) {
        const uint64_t scratch = opts_.scratchpad_bytes(n);
        if (scratch > 0) {
          locals.push_back({nullptr, &n, LocalBuffer::Kind::Scratchpad, scratch, step, step});
          region_lb.push_back(0);
        }
      }
    }

    std::vector<BufferRequest> requests, lb_requests, own_requests;
    for (size_t i = 0; i < locals.size(); ++i) {
      const LocalBuffer& b = locals[i];
      requests.push_back({b.size, b.first, b.last});
      const bool region = b.kind == LocalBuffer::Kind::Region;
      lb_requests.push_back({region ? region_lb[i] : b.size, b.first, b.last});
      if (!region) {
        own_requests.push_back({b.size, b.first, b.last});
        result.naive = checked_add(result.naive, aligned(b.size), "plan");
      }
    }
    result.naive = checked_add(result.naive, slots_total, "plan");
    result.lower_bound = plan::lower_bound(lb_requests, opts_.alignment);

    plan::Placement placement;
    Strategy chosen = strategy;
    if (strategy == Strategy::Auto) {
      bool have = false;
      for (Strategy s : plan::concrete_strategies()) {
        plan::Placement p = plan::plan(s, requests, opts_.alignment);
        if (out_) (*out_->mutable_graphs(index)->mutable_strategy_bytes())[std::string(plan::strategy_name(s))] =
            p.frame_bytes;
        if (!have || p.frame_bytes < placement.frame_bytes) {
          placement = std::move(p);
          chosen = s;
          have = true;
        }
      }
    } else {
      placement = plan::plan(strategy, requests, opts_.alignment);
    }
    result.frame = placement.frame_bytes;
    result.separate = checked_add(result.separate,
                                  checked_add(plan::plan(chosen == Strategy::Auto ? Strategy::GreedyBySize : chosen,
                                                         own_requests, opts_.alignment).frame_bytes,
                                              slots_total, "plan"),
                                  "plan");

    if (out_) record(g, index, parent, locals, placement, regions, result);
    return result;
  }

  uint64_t aligned(uint64_t size) const { return align_up(size, opts_.alignment, "buffer size"); }

 private:
  template <typename Regions>
  void record(const Graph& g, int index, int parent, const std::vector<LocalBuffer>& locals,
              const plan::Placement& placement, const Regions& regions, const GraphResult& result) {
    planfile::GraphPlan& gp = *out_->mutable_graphs(index);
    gp.set_parent(parent);
    gp.set_owner_node(g.owner ? g.owner->name : "");
    gp.set_owner_attribute(g.owner_attribute);
    gp.set_path(g.path());
    gp.set_frame_bytes(result.frame);
    gp.set_lower_bound_bytes(result.lower_bound);
    gp.set_naive_bytes(result.naive);
    gp.set_num_steps(static_cast<int32_t>(g.nodes.size()));
    for (size_t i = 0; i < locals.size(); ++i) {
      const LocalBuffer& b = locals[i];
      planfile::Buffer& pb = *gp.add_buffers();
      switch (b.kind) {
        case LocalBuffer::Kind::Tensor:
          pb.set_name(b.value->name);
          pb.set_kind(planfile::Buffer::TENSOR);
          pb.set_upper_bound(b.value->shape_varies);
          break;
        case LocalBuffer::Kind::Region:
          pb.set_name("region:" + b.node->name);
          pb.set_kind(planfile::Buffer::REGION);
          break;
        case LocalBuffer::Kind::Scratchpad:
          pb.set_name("scratchpad:" + b.node->name);
          pb.set_kind(planfile::Buffer::SCRATCHPAD);
          break;
      }
      pb.set_size(aligned(b.size));
      pb.set_offset(placement.offsets[i]);
      pb.set_first(b.first);
      pb.set_last(b.last);
      pb.set_producer(b.node ? b.node->name : "");
    }
    for (const auto& r : regions) {
      planfile::Region& pr = *gp.add_regions();
      pr.set_node(r.node->name);
      pr.set_op_type(r.node->op_type);
      pr.set_step(locals[r.buffer].first);
      pr.set_buffer(static_cast<int32_t>(r.buffer));
      for (int s : r.subgraphs) pr.add_subgraphs(s);
      uint64_t at = r.body_frame;
      for (const auto& c : r.carried) {
        planfile::CarriedSlots& cs = *pr.add_carried();
        cs.set_name(c.body_input ? c.body_input->name : "");
        cs.set_size(c.size);
        cs.set_slot0(at);
        at += aligned(c.size);
        cs.set_slot1(c.single_slot ? cs.slot0() : at);
        if (!c.single_slot) at += aligned(c.size);
      }
    }
    if (g.owner) add_bindings(g, gp);
  }

  static void add_bindings(const Graph& g, planfile::GraphPlan& gp) {
    const Node& n = *g.owner;
    auto bind = [&](const Value* v, planfile::Binding::Kind kind, const std::string& parent, int slot) {
      planfile::Binding& b = *gp.add_bindings();
      b.set_name(v->name);
      b.set_kind(kind);
      b.set_parent_value(parent);
      b.set_slot(slot);
    };
    const size_t scan_states = n.op_type == "Scan" ? plan::scan_state_count(n) : 0;
    const size_t offset = plan::scan_input_offset(n);
    for (size_t k = 0; k < g.inputs.size(); ++k) {
      if (n.op_type == "Loop") bind(g.inputs[k], planfile::Binding::INPUT, "", static_cast<int>(k));
      else if (k < scan_states) bind(g.inputs[k], planfile::Binding::INPUT, "", static_cast<int>(k));
      else bind(g.inputs[k], planfile::Binding::INPUT, n.inputs[k + offset] ? n.inputs[k + offset]->name : "", -1);
    }
    for (const Value* c : g.captures) bind(c, planfile::Binding::CAPTURE, c->name, -1);
    for (size_t k = 0; k < g.outputs.size(); ++k) {
      const Value* v = g.outputs[k];
      if (n.op_type == "If") {
        bind(v, planfile::Binding::OUTPUT, n.outputs[k] ? n.outputs[k]->name : "", -1);
      } else if (n.op_type == "Loop") {
        const size_t carried = n.inputs.size() - 2;
        if (k <= carried) bind(v, planfile::Binding::OUTPUT, "", static_cast<int>(k + 1));  // slot 0 = counter
        else bind(v, planfile::Binding::OUTPUT, n.outputs[k - 1] ? n.outputs[k - 1]->name : "", -1);
      } else {
        if (k < scan_states) bind(v, planfile::Binding::OUTPUT, "", static_cast<int>(k));
        else bind(v, planfile::Binding::OUTPUT, n.outputs[k] ? n.outputs[k]->name : "", -1);
      }
    }
  }

  const PlanOptions& opts_;
  planfile::Plan* out_;
};

// Absolute frame bases, top-down: a subgraph's frame starts at its region's offset.
void assign_bases(planfile::Plan& plan) {
  for (int i = 0; i < plan.graphs_size(); ++i) {
    const planfile::GraphPlan& g = plan.graphs(i);
    for (const auto& r : g.regions()) {
      const uint64_t base = g.base_offset() + g.buffers(r.buffer()).offset();
      for (int s : r.subgraphs()) plan.mutable_graphs(s)->set_base_offset(base);
    }
  }
}

}  // namespace

planfile::Plan plan_memory(const Model& model, const PlanOptions& options) {
  if (options.alignment == 0 || (options.alignment & (options.alignment - 1)) != 0)
    fail("--align " + std::to_string(options.alignment) + ": alignment must be a power of two");
  planfile::Plan plan;
  for (Strategy s : plan::concrete_strategies()) {
    Planner measure(options, nullptr);
    (*plan.mutable_strategy_bytes())[std::string(plan::strategy_name(s))] = measure.plan_graph(*model.main, s, -1).frame;
  }
  Planner planner(options, &plan);
  GraphResult main = planner.plan_graph(*model.main, options.strategy, -1);
  assign_bases(plan);
  plan.set_alignment(options.alignment);
  plan.set_strategy(std::string(plan::strategy_name(options.strategy)));
  plan.set_arena_bytes(main.frame);
  plan.set_lower_bound_bytes(main.lower_bound);
  plan.set_naive_bytes(main.naive);
  plan.set_per_subgraph_bytes(main.separate);
  uint64_t best = UINT64_MAX;
  for (const auto& [name, bytes] : plan.strategy_bytes())
    if (bytes < best || (bytes == best && name < plan.chosen_strategy())) {
      best = bytes;
      plan.set_chosen_strategy(name);
    }
  if (options.strategy != Strategy::Auto) plan.set_chosen_strategy(std::string(plan::strategy_name(options.strategy)));
  else if (main.frame < best) plan.set_chosen_strategy("auto (per graph)");
  int graph_index = 0;  // plan.graphs is in for_each_graph's order
  for_each_graph(*model.main, [&](Graph& g) {
    for (const auto& v : g.values)
      if (v->dynamic) {
        planfile::DynamicTensor& d = *plan.add_dynamic_tensors();
        d.set_name(v->name);
        d.set_producer(v->producer ? v->producer->name : "");
        d.set_shape(v->type.shape_string());
        d.set_dtype(static_cast<int32_t>(v->type.dtype));
        d.set_graph(graph_index);
      }
    ++graph_index;
  });
  uint64_t weights = 0;
  for_each_graph(*model.main, [&](Graph& g) {
    for (const auto& v : g.values)
      if (v->constant) weights = checked_add(weights, v->constant->byte_size(), "weights");
  });
  plan.set_weights_bytes(weights);
  return plan;
}

}  // namespace memplan
