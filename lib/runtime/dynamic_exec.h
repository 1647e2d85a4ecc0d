// A node that touches a dynamic tensor, made ready at run time: the shapes of its outputs come
// from ONNX's inference on the actual input shapes (and on the values of small integer inputs: a
// Reshape's target, a Range's limits), and its kernel is made for those shapes and kept for when
// they come again. Nothing here runs for a model without dynamic tensors.
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
  // Kernels kept per node, one per shape signature seen (a decoder's attention over 1, 2, ...
  // tokens): the first kKept signatures keep theirs for the session's life, so later runs of the
  // same lengths make nothing; a signature past them is made in one spare place, again each time.
  // Kept, not least-recently-used: a decoder walks its lengths in a cycle, which evicts every
  // entry of an LRU cache before its next use.
  static constexpr size_t kKept = 32;

  explicit DynamicNode(const Node& original);

  // Makes (or finds) the kernel for the inputs' shapes and small integer values. Afterwards
  // output_bytes(k) is what output k needs and output_type(k) its type.
  void prepare(std::span<const TensorView> inputs, DnnlContext& dnnl, const std::string& file);
  Kernel& kernel() { return *current_->kernel; }
  KernelState* state() { return current_->state.get(); }  // the kernel's, made with it
  // The kernel's temporary memory: the plan has none for a kernel made at run time.
  std::byte* scratchpad() {
    std::vector<std::byte>& s = current_->scratchpad;
    return s.data() + (64 - reinterpret_cast<uintptr_t>(s.data()) % 64) % 64;
  }
  uint64_t output_bytes(size_t k) const { return current_->out_bytes[k]; }
  const TensorType& output_type(size_t k) const { return current_->node->outputs[k]->type; }
  size_t kernels_made() const { return made_; }  // over the node's life, for tests

 private:
  // A kernel made for one signature, with the typed node it was made for.
  struct Made {
    std::vector<int64_t> signature;  // per input: rank, dims, then the values inference was shown
    std::unique_ptr<Graph> scope;    // typed copies of the node's inputs and outputs
    std::unique_ptr<Node> node;      // the node over them, with the original's attributes
    std::unique_ptr<Kernel> kernel;
    std::unique_ptr<KernelState> state;
    std::vector<uint64_t> out_bytes;
    std::vector<std::byte> scratchpad;
  };
  void make(Made& m, std::span<const TensorView> inputs, DnnlContext& dnnl, const std::string& file);

  const Node& original_;
  std::vector<std::unique_ptr<Made>> kept_;  // at most kKept, the last one the spare
  Made* current_ = nullptr;
  std::vector<int64_t> probe_;  // the current inputs' signature
  size_t made_ = 0;
};

}  // namespace memplan::rt
