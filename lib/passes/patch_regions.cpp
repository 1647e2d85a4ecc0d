#include "passes/patch_regions.h"

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "memplan/error.h"
#include "runtime/kernels/dnnl/patch_chain.h"

namespace memplan {
namespace {

using rt::dnnl_kernels::patch_refusal;

// Whether node i's tensors (its inputs but constants) come from the run [first, i) or its input
// (what node first reads).
bool reads_inside(const Graph& g, size_t first, size_t i, const std::unordered_map<const Node*, size_t>& step) {
  const Value* x = rt::dnnl_kernels::patch_input(*g.nodes[first]);
  return std::all_of(g.nodes[i]->inputs.begin(), g.nodes[i]->inputs.end(), [&](const Value* v) {
    if (!v || v == x || v->is_constant()) return true;
    auto it = v->producer ? step.find(v->producer) : step.end();
    return it != step.end() && it->second >= first && it->second < i;
  });
}

}  // namespace

namespace {

// The run from node `first` (one patches can carry, reading one tensor): where it may end, and
// what stops it (`stop_at`: the index of the node that does, or the graph's size).
PatchCandidates run_from(const Graph& g, size_t first, const std::unordered_map<const Node*, size_t>& step, size_t& stop_at) {
  PatchCandidates c;
  c.first = first;
  stop_at = g.nodes.size();
  for (size_t i = first; i < g.nodes.size(); ++i) {
    const Node& n = *g.nodes[i];
    if (auto why = patch_refusal(n)) {
      c.stop = "the run stops at " + n.describe() + ", " + *why;
      stop_at = i;
      break;
    }
    if (!reads_inside(g, first, i, step)) {
      c.stop = "the run stops at " + n.describe() + ", which reads a tensor made before it";
      stop_at = i;
      break;
    }
    // The run can end after node i when what it made before i is read only up to i.
    bool closed = true;
    for (size_t j = first; j <= i && closed; ++j)
      for (const Value* v : g.nodes[j]->outputs) {
        if (!v || (j == i && v == n.outputs[0])) continue;
        closed = closed && !v->is_graph_output &&
                 std::all_of(v->consumers.begin(), v->consumers.end(), [&](const Node* r) {
                   auto it = step.find(r);
                   return it != step.end() && it->second <= i;
                 });
      }
    if (closed) c.ends.push_back(i);
  }
  return c;
}

bool windowed(const Node& n) { return n.op_type == "Conv" || n.op_type == "MaxPool"; }

}  // namespace

PatchCandidates find_patch_candidates(const Graph& g) {
  std::unordered_map<const Node*, size_t> step;
  for (size_t i = 0; i < g.nodes.size(); ++i) step[g.nodes[i].get()] = i;
  // The first run of nodes patches can carry that has a Conv or MaxPool: a run of pointwise ops
  // alone (a TensorFlow model's input scaled before its Transpose to NCHW) is passed over.
  std::optional<PatchCandidates> first_run;
  for (size_t start = 0; start < g.nodes.size();) {
    if (patch_refusal(*g.nodes[start]) || !reads_inside(g, start, start, step)) {
      ++start;
      continue;
    }
    size_t stop_at = 0;
    PatchCandidates c = run_from(g, start, step, stop_at);
    const bool has_window = std::any_of(g.nodes.begin() + static_cast<std::ptrdiff_t>(start),
                                        g.nodes.begin() + static_cast<std::ptrdiff_t>(stop_at),
                                        [](const auto& n) { return windowed(*n); });
    if (has_window && !c.ends.empty()) return c;
    if (!first_run) first_run = c;
    start = std::max(stop_at, start + 1);
  }
  if (first_run) return *first_run;
  PatchCandidates none;
  none.first = g.nodes.size();
  none.stop = "the main graph has no Conv, MaxPool or pointwise op patches can carry";
  return none;
}

void make_patch_region(Graph& g, const PatchRegion& r, const std::string& model_path) {
  const std::string what = model_path + ": patch region '" + r.first + "' .. '" + r.last + "'";
  const auto index_of = [&](const std::string& name) {
    auto it = std::find_if(g.nodes.begin(), g.nodes.end(), [&](const auto& n) { return n->name == name; });
    if (it == g.nodes.end()) fail(what + ": the main graph has no node '" + name + "'");
    return static_cast<size_t>(it - g.nodes.begin());
  };
  const size_t first = index_of(r.first), last = index_of(r.last);
  const PatchCandidates c = find_patch_candidates(g);
  if (first != c.first || std::find(c.ends.begin(), c.ends.end(), last) == c.ends.end())
    fail(what + " is not a run patches can carry" + (c.stop.empty() ? "" : " (" + c.stop + ")"));
  if (r.tile_rows < 1) fail(what + ": tiles of " + std::to_string(r.tile_rows) + " rows");

  auto node = std::make_unique<Node>();
  node->name = "patches(" + r.first + " .. " + r.last + ")";
  node->op_type = rt::dnnl_kernels::kPatchChainOp;
  node->opset = g.nodes[first]->opset;
  node->graph = &g;
  node->set_attr_int(rt::dnnl_kernels::kTileRowsAttr, r.tile_rows);
  node->set_attr_int(rt::dnnl_kernels::kKeepRowsAttr, r.keep_rows ? 1 : 0);
  const std::vector<Value*>& first_inputs = g.nodes[first]->inputs;
  Value* x = *std::find(first_inputs.begin(), first_inputs.end(), rt::dnnl_kernels::patch_input(*g.nodes[first]));
  Value* y = g.nodes[last]->outputs[0];
  node->inputs.push_back(x);
  node->outputs.push_back(y);

  auto chain = std::make_unique<Graph>();
  chain->name = node->name;
  chain->parent = &g;
  chain->owner = node.get();
  chain->owner_attribute = "fused_chain";
  chain->depth = g.depth + 1;
  std::unordered_set<const Node*> moved;
  for (size_t i = first; i <= last; ++i) {
    std::unique_ptr<Node> n = std::move(g.nodes[i]);
    moved.insert(n.get());
    for (Value* v : n->inputs)  // the constants: the chain's node reads them (its kernel copies them)
      if (v && v->is_constant() && std::find(node->inputs.begin(), node->inputs.end(), v) == node->inputs.end())
        node->inputs.push_back(v);
    for (Value* v : n->outputs)
      if (v && v != y) chain->adopt_value(g.release_value(v));
    n->graph = chain.get();
    chain->nodes.push_back(std::move(n));
  }
  for (Value* v : node->inputs) {
    std::erase_if(v->consumers, [&](const Node* n) { return moved.count(n) > 0; });
    v->consumers.push_back(node.get());
  }
  y->producer = node.get();
  node->fused_chain = std::move(chain);
  g.nodes.erase(g.nodes.begin() + static_cast<std::ptrdiff_t>(first), g.nodes.begin() + static_cast<std::ptrdiff_t>(last) + 1);
  g.nodes.insert(g.nodes.begin() + static_cast<std::ptrdiff_t>(first), std::move(node));
}

}  // namespace memplan
