// Which op types memplan can run, and the factories that make their kernels.
#pragma once

#include <string>
#include <vector>

#include "runtime/kernel.h"

namespace memplan::rt {

class KernelRegistry {
 public:
  static const KernelRegistry& instance();
  void add(const std::string& op_type, KernelFactory factory);  // default ONNX domain
  KernelFactory find(const std::string& op_type, const std::string& domain) const;
  std::vector<std::string> op_types() const;

 private:
  std::vector<std::pair<std::string, KernelFactory>> factories_;
};

// Each kernel group registers its ops here (explicit calls: static registrars would be dropped
// by the linker from a static library).
void register_dnnl_kernels(KernelRegistry& r);
void register_elementwise_kernels(KernelRegistry& r);
void register_shape_kernels(KernelRegistry& r);
void register_norm_loss_kernels(KernelRegistry& r);  // kernels/norm_loss_kernels.cpp
void register_quantize_kernels(KernelRegistry& r);   // kernels/quantize_kernels.cpp

}  // namespace memplan::rt
