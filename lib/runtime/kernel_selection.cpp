#include "runtime/kernel_selection.h"

#include <map>

#include "memplan/error.h"
#include "runtime/kernel_registry.h"

namespace memplan {

uint64_t KernelSelection::scratchpad_bytes(const Node& n) const {
  auto it = kernels.find(&n);
  return it == kernels.end() || !it->second ? 0 : it->second->scratchpad_bytes();
}

std::string KernelSelection::unsupported_summary() const {
  std::string out;
  for (const auto& u : unsupported) out += (out.empty() ? "" : "; ") + u;
  return out;
}

KernelSelection select_kernels(const Model& model, rt::DnnlContext& dnnl) {
  KernelSelection sel;
  rt::KernelEnv env{&dnnl, model.path};
  const auto& registry = rt::KernelRegistry::instance();
  std::map<std::string, std::vector<std::string>> missing;  // op -> node names
  for_each_graph(*model.main, [&](Graph& g) {
    for (const auto& n : g.nodes) {
      if (n->domain.empty() && (n->op_type == "If" || n->op_type == "Loop" || n->op_type == "Scan")) continue;
      rt::KernelFactory factory = registry.find(n->op_type, n->domain);
      if (!factory) {
        missing[n->op_type + (n->domain.empty() ? "" : " (domain " + n->domain + ")") + " opset " +
                std::to_string(n->opset)]
            .push_back(n->name);
        continue;
      }
      try {
        auto kernel = factory(*n, env);
        if (!kernel) {
          sel.unsupported.push_back(n->describe() + ": no kernel for its types or attributes");
          continue;
        }
        sel.kernels.emplace(n.get(), std::move(kernel));
      } catch (const Error& e) {
        if (e.kind() != ErrorKind::Unsupported) throw;
        sel.unsupported.push_back(e.what());
      }
    }
  });
  for (const auto& [op, nodes] : missing) {
    std::string entry = op + " x" + std::to_string(nodes.size()) + " (node '" + nodes[0] + "'" +
                        (nodes.size() > 1 ? ", ..." : "") + ")";
    sel.unsupported.insert(sel.unsupported.begin(), "no kernel for " + entry);
  }
  return sel;
}

}  // namespace memplan
