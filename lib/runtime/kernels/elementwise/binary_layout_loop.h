// memplan's own float32 loop for a binary op whose second operand is the output's shape, a scalar,
// or one value per channel, in the plain, a channel-blocked (nChw8c / nChw16c) or the
// channels-last (NHWC) layout.
//
// oneDNN 2.6 runs those combinations on its reference kernel where the layouts differ (a scalar
// described plain against a blocked tensor) and for every Div on a blocked tensor
// (shared/design/onednn-fast-paths.md): 3 to 13 ms a node where a vectorized pass takes
// microseconds. This loop is what the binary kernel takes there instead, decided at load: it is
// exact (x / c is a division, not a product by 1 / c), vectorized for the CPU it runs on, and
// split across the run's threads.
#pragma once

#include <cstdint>

namespace memplan::rt::elt {

enum class FlatBinOp { Add, Sub, Mul, Div, Max, Min, PRelu };  // PRelu: a < 0 ? a * b : a

// How the second operand `b` lines up with the full-shape operand `a` and the output.
enum class Operand {
  Full,        // b has the output's shape and layout: element i pairs with element i
  Scalar,      // one value
  PerChannel,  // one value per channel of the [N, C, H, W] output, in channel order
};

struct LayoutLoop {
  FlatBinOp op = FlatBinOp::Add;
  Operand operand = Operand::Full;
  bool swapped = false;  // compute b op a (a scalar first operand of Sub or Div: c - x, c / x)
  // The output's geometry: N * C * H * W elements; `block` 0 (plain, or channels-last) or the
  // channel block, which divides C. Only PerChannel reads the geometry; the others see a flat array.
  int64_t n = 1, c = 1, hw = 1;
  int block = 0;
  bool channels_last = false;

  uint64_t count() const { return static_cast<uint64_t>(n) * static_cast<uint64_t>(c) * static_cast<uint64_t>(hw); }
  // y = a op b over count() elements; y may be a (each element is read before it is written).
  // Splits across the OpenMP threads of the calling run when the tensor is large enough.
  void run(const float* a, const float* b, float* y) const;
};

}  // namespace memplan::rt::elt
