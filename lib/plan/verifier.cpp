#include "plan/verifier.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "memplan/error.h"
#include "plan/lifetimes.h"

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

class Verifier {
 public:
  Verifier(const Model& m, const planfile::Plan& p) : model_(m), plan_(p) {}

  void run() {
    if (plan_.graphs_size() == 0) reject("the plan has no graphs");
    if (plan_.alignment() == 0 || (plan_.alignment() & (plan_.alignment() - 1))) reject("alignment is not a power of two");
    // Pair IR graphs with plan graphs in the planner's order: pre-order, subgraphs in node order.
    std::vector<const Graph*> graphs;
    for_each_graph(const_cast<Graph&>(*model_.main), [&](Graph& g) { graphs.push_back(&g); });
    if (graphs.size() != static_cast<size_t>(plan_.graphs_size()))
      reject("the plan has " + std::to_string(plan_.graphs_size()) + " graphs, the model " + std::to_string(graphs.size()));
    for (size_t i = 0; i < graphs.size(); ++i) {
      const auto& gp = plan_.graphs(static_cast<int>(i));
      const std::string owner = graphs[i]->owner ? graphs[i]->owner->name : "";
      if (gp.owner_node() != owner || gp.owner_attribute() != graphs[i]->owner_attribute)
        reject("plan graph " + std::to_string(i) + " is not " + graphs[i]->path());
      index_[graphs[i]] = static_cast<int>(i);
    }
    if (plan_.graphs(0).frame_bytes() > plan_.arena_bytes()) reject("the main frame is larger than the arena");
    verify_dynamic();
    for (const Graph* g : graphs) verify_graph(*g);
  }

 private:
  // Last step at which each value of g is read by g's nodes, directly or from inside their subgraphs.
  static std::unordered_map<const Value*, int64_t> last_reads(const Graph& g) {
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

  // Dynamic tensors live outside the arena: the plan lists exactly the IR's, each with its graph
  // (so the session allocates each one), and places none of them.
  void verify_dynamic() {
    std::map<std::pair<int, std::string>, int> listed;
    for (const auto& d : plan_.dynamic_tensors()) ++listed[{d.graph(), d.name()}];
    for (const auto& [graph, index] : index_)
      for (const auto& v : graph->values) {
        if (!v->dynamic) continue;
        if (listed[{index, v->name}]-- != 1)
          reject(graph->path() + ": dynamic tensor '" + v->name + "' is not listed once in the plan");
        for (const auto& b : plan_.graphs(index).buffers())
          if (b.kind() == planfile::Buffer::TENSOR && b.name() == v->name)
            reject(graph->path() + ": dynamic tensor '" + v->name + "' has arena memory in the plan");
      }
    for (const auto& [key, left] : listed)
      if (left > 0) reject("the plan lists '" + key.second + "' as dynamic, the model does not");
  }

  const planfile::Buffer& buffer_named(const planfile::GraphPlan& gp, const std::string& name, const Graph& g) {
    for (const auto& b : gp.buffers())
      if (b.name() == name) return b;
    reject(g.path() + ": '" + name + "' has no buffer in the plan");
  }

  void check_placement(const planfile::Buffer& b, uint64_t base, uint64_t limit, const std::string& where) {
    const uint64_t begin = base + b.offset();
    if (begin % plan_.alignment() != 0) reject(where + ": buffer '" + b.name() + "' is misaligned");
    if (b.offset() > limit || b.size() > limit - b.offset())
      reject(where + ": buffer '" + b.name() + "' ends past its frame (" + std::to_string(limit) + " bytes)");
  }

  void verify_graph(const Graph& g) {
    const auto& gp = plan_.graphs(index_.at(&g));
    const std::string where = g.path();
    const uint64_t base = gp.base_offset();
    if (base > plan_.arena_bytes() || gp.frame_bytes() > plan_.arena_bytes() - base)
      reject(where + ": the frame leaves the arena");
    const auto last = last_reads(g);
    const int64_t final_step = std::max<int64_t>(static_cast<int64_t>(g.nodes.size()) - 1, 0);
    std::unordered_map<const Node*, int64_t> step;
    for (size_t t = 0; t < g.nodes.size(); ++t) step[g.nodes[t].get()] = static_cast<int64_t>(t);

    std::vector<Use> uses;
    auto add = [&](const planfile::Buffer& b, int64_t first, int64_t lastt, int64_t tick_offset, uint64_t at) {
      check_placement(b, base, gp.frame_bytes(), where);
      uses.push_back({at + b.offset(), at + b.offset() + b.size(), first + tick_offset, lastt + tick_offset, "'" + b.name() + "'"});
    };
    // Values needing memory of this frame, with lifetimes from the IR.
    struct Need { const planfile::Buffer* buffer; int64_t first, last; };
    std::vector<Need> needs;
    for (const auto& v : g.values) {
      if (v->constant || v->dynamic) continue;
      const bool main = g.owner == nullptr;
      if (!main && (v->is_graph_input || !v->producer)) continue;
      if (plan::is_bound_output(g, v.get())) continue;
      const planfile::Buffer& b = buffer_named(gp, v->name, g);
      if (b.size() < v->capacity_bytes) reject(where + ": buffer '" + v->name + "' is smaller than the tensor");
      int64_t first = v->producer ? step.at(v->producer) : 0;
      int64_t end = std::max(first, last.count(v.get()) ? last.at(v.get()) : first);
      if (main && v->is_graph_output) end = final_step;
      needs.push_back({&b, first, end});
    }
    // A scratchpad or region lives at its node's step only (node names need not be unique).
    for (const auto& b : gp.buffers()) {
      if (b.kind() == planfile::Buffer::TENSOR) continue;
      if (b.first() < 0 || static_cast<size_t>(b.first()) >= g.nodes.size() ||
          g.nodes[static_cast<size_t>(b.first())]->name != b.producer())
        reject(where + ": '" + b.name() + "' is at step " + std::to_string(b.first()) + ", where node '" + b.producer() +
               "' is not");
      needs.push_back({&b, b.first(), b.first()});
    }
    for (const Need& n : needs) add(*n.buffer, n.first, n.last, 0, base);
    check_disjoint(uses, where);

    for (const auto& r : gp.regions()) verify_region(g, gp, r, base);
  }

  // A region holds its subgraphs' frames (If branches over each other) and, after the body frame,
  // the loop slots. A Loop/Scan body is walked over three iterations with its slots.
  void verify_region(const Graph& g, const planfile::GraphPlan& gp, const planfile::Region& r, uint64_t base) {
    if (r.buffer() < 0 || r.buffer() >= gp.buffers_size()) reject(g.path() + ": region of '" + r.node() + "' has no buffer");
    const planfile::Buffer& rb = gp.buffers(r.buffer());
    const uint64_t region_at = base + rb.offset();
    for (int s : r.subgraphs()) {
      if (s <= 0 || s >= plan_.graphs_size()) reject(g.path() + ": region of '" + r.node() + "' names no graph");
      const auto& sp = plan_.graphs(s);
      if (sp.base_offset() != region_at) reject(sp.path() + ": frame does not start at its region");
      if (sp.frame_bytes() > rb.size()) reject(sp.path() + ": frame is larger than its region");
    }
    if (r.carried_size() == 0) return;
    if (r.subgraphs_size() != 1) reject(g.path() + ": loop region of '" + r.node() + "' must hold one body");
    const auto& body_plan = plan_.graphs(r.subgraphs(0));
    const Graph* body = nullptr;
    for (const auto& [graph, idx] : index_)
      if (idx == r.subgraphs(0)) body = graph;
    const auto last = last_reads(*body);
    std::unordered_map<const Node*, int64_t> step;
    for (size_t t = 0; t < body->nodes.size(); ++t) step[body->nodes[t].get()] = static_cast<int64_t>(t);
    const int64_t steps = std::max<int64_t>(static_cast<int64_t>(body->nodes.size()), 1);
    constexpr int kIterations = 3;

    std::vector<Use> uses;
    for (int k = 0; k < kIterations; ++k)
      for (const auto& b : body_plan.buffers()) {
        int64_t first = b.first(), lastt = b.last();
        uses.push_back({region_at + b.offset(), region_at + b.offset() + b.size(), k * steps + first, k * steps + lastt,
                        "body buffer '" + b.name() + "' (iteration " + std::to_string(k) + ")"});
      }
    for (const auto& c : r.carried()) {
      const uint64_t size = (c.size() + plan_.alignment() - 1) / plan_.alignment() * plan_.alignment();
      for (uint64_t slot : {c.slot0(), c.slot1()})
        if (slot < body_plan.frame_bytes() || slot > rb.size() || size > rb.size() - slot)
          reject(g.path() + ": slot of '" + c.name() + "' lies outside the region after the body frame");
      const Value* in = nullptr;
      for (const Value* v : body->inputs)
        if (v->name == c.name()) in = v;
      if (c.slot0() == c.slot1()) {  // the iteration counter: live throughout
        uses.push_back({region_at + c.slot0(), region_at + c.slot0() + size, 0, kIterations * steps,
                        "slot of '" + c.name() + "'"});
        continue;
      }
      // Which body output feeds it: the body output at the same carried position.
      const Value* out = nullptr;
      for (size_t k = 0; k < body->inputs.size(); ++k)
        if (body->inputs[k] == in) {
          const size_t pos = body->owner->op_type == "Loop" ? k - 1 : k;
          if (pos < body->outputs.size()) out = body->outputs[pos];
        }
      const int64_t written = out && out->producer && out->graph == body ? step.at(out->producer) : steps - 1;
      const int64_t read_until = in && last.count(in) ? last.at(in) : 0;
      for (int k = 0; k < kIterations; ++k) {
        const uint64_t slot = k % 2 == 0 ? c.slot0() : c.slot1();
        uses.push_back({region_at + slot, region_at + slot + size, k * steps + written, (k + 1) * steps + read_until,
                        "slot " + std::to_string(k % 2) + " of '" + c.name() + "' (written in iteration " + std::to_string(k) + ")"});
      }
    }
    check_disjoint(uses, body->path());
  }

  const Model& model_;
  const planfile::Plan& plan_;
  std::unordered_map<const Graph*, int> index_;
};

}  // namespace

void verify_plan(const Model& model, const planfile::Plan& plan) { Verifier(model, plan).run(); }

}  // namespace memplan
