#include "report/summary.h"

#include <map>
#include <sstream>

namespace memplan {
namespace {

std::string graph_label(const Graph& g) {
  return g.owner ? g.owner->describe() + "." + g.owner_attribute : std::string("main graph");
}

size_t count_nodes(const Graph& g) { return g.nodes.size(); }

}  // namespace

std::string model_summary(const Model& m) {
  std::ostringstream out;
  out << "model: " << m.path << " (ir_version " << m.ir_version << ", opset";
  for (const auto& [domain, version] : m.opsets) out << " " << (domain.empty() ? "ai.onnx" : domain) << ":" << version;
  out << (m.producer.empty() ? "" : ", producer " + m.producer) << ")\n";
  out << "sha256: " << m.sha256 << "\n";

  std::map<std::string, int> ops;
  size_t graphs = 0, nodes = 0;
  uint64_t weights = 0;
  out << "graphs:\n";
  for_each_graph(*m.main, [&](Graph& g) {
    ++graphs;
    nodes += count_nodes(g);
    out << std::string(2 + 2 * static_cast<size_t>(g.depth), ' ') << graph_label(g) << ": " << g.nodes.size()
        << " nodes, " << g.inputs.size() << " inputs, " << g.outputs.size() << " outputs";
    if (!g.captures.empty()) {
      out << ", captures";
      for (const Value* v : g.captures) out << " " << v->name;
    }
    out << "\n";
    for (const auto& n : g.nodes) ++ops[n->op_type];
    for (const auto& v : g.values)
      if (v->constant) weights += v->constant->byte_size();
  });
  out << "totals: " << graphs << " graphs, " << nodes << " nodes, weights " << weights << " bytes\n";
  out << "ops:";
  for (const auto& [op, count] : ops) out << " " << op << " x" << count;
  out << "\n";

  out << "tensors (graph depth, name, dtype, shape, bytes):\n";
  for_each_graph(*m.main, [&](Graph& g) {
    for (const auto& v : g.values) {
      if (v->constant) continue;
      out << "  " << g.depth << " " << v->name << " " << dtype_name(v->type.dtype) << " " << v->type.shape_string()
          << " " << v->capacity_bytes << (v->shape_varies ? " (upper bound)" : "") << "\n";
    }
  });
  return out.str();
}

}  // namespace memplan
