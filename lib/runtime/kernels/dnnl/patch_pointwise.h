// The pointwise layers of a patch chain (patch_chain.h): an activation, or arithmetic with a
// constant (one value, or one per channel) or with another tensor of the chain of the same shape,
// on a band of channels-last rows. What converters leave unfused between convolutions (PRelu,
// HardSwish written out, a scale and shift, x * sigmoid(x), an input's normalization) would
// otherwise end a patch region.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/kernel.h"

namespace memplan::rt::dnnl_kernels {

struct PointwiseLayer {
  enum class Op : uint8_t { Relu, LeakyRelu, Clip, Sigmoid, HardSigmoid, HardSwish, Tanh, PRelu, Add, Sub, Mul, Div };
  Op op = Op::Relu;
  // The other operand where it is a constant (PRelu's slope, Add's ...): the node's input, and
  // its values (one, or one per channel; read when the kernel is made).
  int constant_input = -1;
  std::vector<float> constant;
  bool constant_first = false;  // Sub or Div of a constant by the tensor
  size_t activation = 0;        // the node's input that is the chain's tensor
  int operand = -1;             // the node's input that is another tensor of the chain, or -1
};

// The node as a pointwise layer, or none, with `why` set. From shapes alone: a constant's bytes
// may be released already (its kernel made).
std::optional<PointwiseLayer> pointwise_layer(const Node& n, std::string& why);

// Runs node n's pointwise layer `p` on rows of a tensor of `channels` channels, channels last:
// input 0 the tensor's rows, input 1 (with an operand) the other tensor's same rows, output 0 as
// many. Reads the node's constants.
std::unique_ptr<Kernel> make_rows_pointwise(const Node& n, PointwiseLayer p, int64_t channels, const std::string& where);

}  // namespace memplan::rt::dnnl_kernels
