#include "passes/patch_regions.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "memplan/error.h"
#include "runtime/kernels/dnnl/patch_chain.h"

namespace memplan {
namespace {

using rt::dnnl_kernels::patch_refusal;

// Whether node i's tensors come from the run [first, i) or its input (node first's input 0).
bool reads_inside(const Graph& g, size_t first, size_t i, const std::unordered_map<const Node*, size_t>& step) {
  const Node& n = *g.nodes[i];
  const Value* x = g.nodes[first]->inputs[0];
  const auto inside = [&](const Value* v) {
    if (!v || v == x) return true;
    auto it = v->producer ? step.find(v->producer) : step.end();
    return it != step.end() && it->second >= first && it->second < i;
  };
  // Input 0 and a Conv's addend (input 3) are activations; inputs 1 and 2 are constants.
  return inside(n.inputs[0]) && (n.inputs.size() < 4 || inside(n.inputs[3]));
}

}  // namespace

PatchCandidates find_patch_candidates(const Graph& g) {
  PatchCandidates c;
  std::unordered_map<const Node*, size_t> step;
  for (size_t i = 0; i < g.nodes.size(); ++i) step[g.nodes[i].get()] = i;
  c.first = g.nodes.size();
  for (size_t i = 0; i < g.nodes.size() && c.first == g.nodes.size(); ++i)
    if (!patch_refusal(*g.nodes[i]) && !g.nodes[i]->inputs[0]->is_constant()) c.first = i;
  if (c.first == g.nodes.size()) {
    c.stop = "the main graph has no Conv or MaxPool patches can carry";
    return c;
  }
  // Readers of each value made in the run, past the run's end so far.
  for (size_t i = c.first; i < g.nodes.size(); ++i) {
    const Node& n = *g.nodes[i];
    if (auto why = patch_refusal(n)) {
      c.stop = "the run stops at " + n.describe() + ", " + *why;
      break;
    }
    if (!reads_inside(g, c.first, i, step)) {
      c.stop = "the run stops at " + n.describe() + ", which reads a tensor made before it";
      break;
    }
    // The run can end after node i when what it made before i is read only up to i.
    bool closed = true;
    for (size_t j = c.first; j <= i && closed; ++j)
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
  Value* x = g.nodes[first]->inputs[0];
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
