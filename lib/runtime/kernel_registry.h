// Which op types memplan can run, and the factories that make their kernels.
#pragma once

#include <string>
#include <vector>

#include "runtime/kernel.h"

namespace memplan::rt {

// Whether a factory takes the node, judged from its inputs and attributes alone: it is asked
// during shape inference, before the node's outputs are typed. Only ops that ONNX defines as
// functions, and whose kernel takes fewer types than the op, register one: a node their kernel
// refuses then runs as its function body (passes/expand_functions.h).
using KernelAccepts = bool (*)(const Node& node);

class KernelRegistry {
 public:
  static const KernelRegistry& instance();
  // Default ONNX domain; without `accepts`, the factory is taken to accept every node of the op.
  void add(const std::string& op_type, KernelFactory factory, KernelAccepts accepts = nullptr);
  KernelFactory find(const std::string& op_type, const std::string& domain) const;
  // True when the node's op has a factory that accepts it (see KernelAccepts).
  bool accepts(const Node& node) const;
  std::vector<std::string> op_types() const;

 private:
  struct Entry {
    std::string op_type;
    KernelFactory factory;
    KernelAccepts accepts;
  };
  const Entry* entry(const std::string& op_type, const std::string& domain) const;
  std::vector<Entry> factories_;
};

// Each kernel group registers its ops here (explicit calls: static registrars would be dropped
// by the linker from a static library).
void register_dnnl_kernels(KernelRegistry& r);
void register_elementwise_kernels(KernelRegistry& r);
void register_shape_kernels(KernelRegistry& r);
void register_norm_loss_kernels(KernelRegistry& r);  // kernels/norm_loss_kernels.cpp
void register_quantize_kernels(KernelRegistry& r);   // kernels/quantize_kernels.cpp

}  // namespace memplan::rt
