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

// Each kernel family registers its ops here, one function a folder of kernels/ (explicit calls:
// static registrars would be dropped by the linker from a static library). An op is registered
// once, by the family that holds its kernel.
void register_dnnl_kernels(KernelRegistry& r);         // kernels/dnnl/: the oneDNN primitives
void register_elementwise_kernels(KernelRegistry& r);  // kernels/elementwise/
void register_shape_kernels(KernelRegistry& r);        // kernels/shape/: moving and selecting elements
void register_reduce_kernels(KernelRegistry& r);       // kernels/reduce/: Reduce*, ArgMax, TopK, ...
void register_norm_kernels(KernelRegistry& r);         // kernels/norm/
void register_loss_kernels(KernelRegistry& r);         // kernels/loss/
void register_linalg_kernels(KernelRegistry& r);       // kernels/linalg/: Trilu, EyeLike, Det, Einsum
void register_rnn_kernels(KernelRegistry& r);          // kernels/rnn/: RNN, LSTM, GRU
void register_resize_kernels(KernelRegistry& r);       // kernels/resize/: Resize, Upsample, GridSample
void register_detection_kernels(KernelRegistry& r);    // kernels/detection/: NonMaxSuppression, RoiAlign
void register_quantized_kernels(KernelRegistry& r);    // kernels/quantized/
void register_signal_kernels(KernelRegistry& r);       // kernels/signal/: windows, DFT, STFT, MelWeightMatrix
void register_text_kernels(KernelRegistry& r);         // kernels/text/: TfIdfVectorizer

}  // namespace memplan::rt
