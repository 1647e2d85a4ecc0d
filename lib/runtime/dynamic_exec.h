// A node that touches a dynamic tensor, made ready at run time: the shapes of its outputs come
// from ONNX's inference on the actual input shapes (and on the values of small integer inputs: a
// Reshape's target, a Range's limits), and its kernel is made for those shapes and kept while they
// repeat. Nothing here runs for a model without dynamic tensors.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "runtime/kernel.h"

namespace memplan::rt {

class DynamicNode {
 public:
  explicit DynamicNode(const Node& original);

  // Makes the kernel again when the inputs' shapes (or small integer values) changed since the
  // last call. Afterwards output_bytes(k) is what output k needs and output_dims(k) its shape.
  void prepare(std::span<const TensorView> inputs, DnnlContext& dnnl, const std::string& file);
  Kernel& kernel() { return *kernel_; }
  KernelState* state() { return state_.get(); }  // the kernel's, made with it
  // The kernel's temporary memory: the plan has none for a kernel made at run time.
  std::byte* scratchpad() { return scratchpad_.data() + (64 - reinterpret_cast<uintptr_t>(scratchpad_.data()) % 64) % 64; }
  uint64_t output_bytes(size_t k) const { return out_bytes_[k]; }
  const TensorType& output_type(size_t k) const { return node_.outputs[k]->type; }

 private:
  const Node& original_;
  std::unique_ptr<Graph> scope_;  // typed copies of the node's inputs and outputs, made anew
  Node node_;    // the node over them, with the original's attributes
  std::unique_ptr<Kernel> kernel_;
  std::unique_ptr<KernelState> state_;
  std::vector<uint64_t> out_bytes_;
  std::vector<std::byte> scratchpad_;
  std::vector<int64_t> signature_;  // per input: rank, dims, then the values inference was shown
  std::vector<int64_t> probe_;      // the current inputs' signature, compared against signature_
};

}  // namespace memplan::rt
