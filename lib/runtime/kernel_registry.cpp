#include "runtime/kernel_registry.h"

#include <algorithm>

namespace memplan::rt {

const KernelRegistry& KernelRegistry::instance() {
  static const KernelRegistry registry = [] {
    KernelRegistry r;
    register_dnnl_kernels(r);
    register_elementwise_kernels(r);
    register_shape_kernels(r);
    register_reduce_kernels(r);
    register_norm_kernels(r);
    register_loss_kernels(r);
    register_linalg_kernels(r);
    register_rnn_kernels(r);
    register_resize_kernels(r);
    register_detection_kernels(r);
    register_quantized_kernels(r);
    register_signal_kernels(r);
    register_text_kernels(r);
    return r;
  }();
  return registry;
}

void KernelRegistry::add(const std::string& op_type, KernelFactory factory, KernelAccepts accepts) {
  factories_.push_back({op_type, factory, accepts});
}

const KernelRegistry::Entry* KernelRegistry::entry(const std::string& op_type, const std::string& domain) const {
  if (!domain.empty()) return nullptr;
  auto it = std::find_if(factories_.begin(), factories_.end(), [&](const Entry& e) { return e.op_type == op_type; });
  return it == factories_.end() ? nullptr : &*it;
}

KernelFactory KernelRegistry::find(const std::string& op_type, const std::string& domain) const {
  const Entry* e = entry(op_type, domain);
  return e ? e->factory : nullptr;
}

bool KernelRegistry::accepts(const Node& node) const {
  const Entry* e = entry(node.op_type, node.domain);
  return e && (!e->accepts || e->accepts(node));
}

std::vector<std::string> KernelRegistry::op_types() const {
  std::vector<std::string> out;
  for (const Entry& e : factories_) out.push_back(e.op_type);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace memplan::rt
