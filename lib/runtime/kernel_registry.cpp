#include "runtime/kernel_registry.h"

#include <algorithm>

namespace memplan::rt {

const KernelRegistry& KernelRegistry::instance() {
  static const KernelRegistry registry = [] {
    KernelRegistry r;
    register_dnnl_kernels(r);
    register_elementwise_kernels(r);
    register_shape_kernels(r);
    register_norm_loss_kernels(r);
    register_quantize_kernels(r);
    return r;
  }();
  return registry;
}

void KernelRegistry::add(const std::string& op_type, KernelFactory factory) {
  factories_.emplace_back(op_type, factory);
}

KernelFactory KernelRegistry::find(const std::string& op_type, const std::string& domain) const {
  if (!domain.empty()) return nullptr;
  auto it = std::find_if(factories_.begin(), factories_.end(), [&](const auto& p) { return p.first == op_type; });
  return it == factories_.end() ? nullptr : it->second;
}

std::vector<std::string> KernelRegistry::op_types() const {
  std::vector<std::string> out;
  for (const auto& [op, f] : factories_) out.push_back(op);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace memplan::rt
