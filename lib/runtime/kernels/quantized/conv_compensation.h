// ConvInteger with weights that do not fit int8 on oneDNN's int8 convolution, exactly.
//
// ONNX Runtime's quantize_dynamic writes uint8 weights about their own zero point (IS-Net's
// background remover): w - w_zp runs from -255 to 255, and no int8 kernel takes it. But
//   sum x'(w - w_zp) = sum x'(w - d) + (d - w_zp[m]) * sum x'      (x' = x - x_zp)
// where w - d fits int8 (d = 128 for uint8 weights, 0 for int8 ones), and sum x' is the source
// summed over the output's receptive field in the group's channels: the same for every output
// channel of a group. So oneDNN's int8 convolution runs the first term (int32 sums, exact with
// VNNI) and these loops add the second: one channel sum per input position and one box sum per
// output position ("window sums"), a few additions against the convolution's C * k products per
// output, then the epilogue (the fused Cast, Mul, Add and Relu of ir/fused_dequantize.h).
// Everything is int32 until the epilogue's one conversion, so the bits are ONNX Runtime's.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace memplan::rt::quant {

// A convolution over plain (N, C, D, H, W) activations, spatial dims padded in front to three
// (1-D and 2-D convolutions are 3-D ones with size-1 dims). Also what quantized_conv.cpp's loops
// walk.
struct WindowGeometry {
  int64_t N = 1, C = 1, M = 1, group = 1;
  std::array<int64_t, 3> in{1, 1, 1}, out{1, 1, 1}, k{1, 1, 1}, stride{1, 1, 1}, dil{1, 1, 1}, pad{0, 0, 0};
  int64_t in_size() const { return in[0] * in[1] * in[2]; }
  int64_t out_size() const { return out[0] * out[1] * out[2]; }
};

// Calls f(kd, kh, id, ih) for every kernel row (kd, kh) of output row (od, oh) that lands inside
// the input, at input row (id, ih); rows in the padding add nothing to any convolution here.
template <typename F>
void for_each_window_row(const WindowGeometry& g, int64_t od, int64_t oh, F&& f) {
  for (int64_t kd = 0; kd < g.k[0]; ++kd) {
    const int64_t id = od * g.stride[0] - g.pad[0] + kd * g.dil[0];
    if (id < 0 || id >= g.in[0]) continue;
    for (int64_t kh = 0; kh < g.k[1]; ++kh) {
      const int64_t ih = oh * g.stride[1] - g.pad[1] + kh * g.dil[1];
      if (ih >= 0 && ih < g.in[1]) f(kd, kh, id, ih);
    }
  }
}

// The geometry of x [N, C, spatial...] convolved into y [N, M, spatial...] (1 to 3 spatial dims)
// by `group` groups of a window of these kernel sizes, strides, dilations and leading pads (one
// per spatial dim; dilation 1 is dense, as ONNX's).
using GeometryDims = std::vector<int64_t>;
WindowGeometry window_geometry(const GeometryDims& x, const GeometryDims& y, int64_t group, const GeometryDims& kernel,
                               const GeometryDims& strides, const GeometryDims& dilations, const GeometryDims& pads_begin);

// int32 elements of the scratch window_sums needs: one plane per batch and group at the input's
// size (the channel sums) and one at the output's (the window sums). Overflow-checked.
uint64_t window_sums_scratch(const WindowGeometry& g);

// sums[(n * group + g) * out_size + p] = sum over the group's channels and the kernel's window at
// output position p of (x - x_zp); positions in the padding add nothing. `x` is uint8 (or int8,
// `is_signed`) in plain layout; `scratch` holds window_sums_scratch(g) int32s, sums first. Runs
// on the calling thread's OpenMP team.
void window_sums(const WindowGeometry& g, const void* x, bool is_signed, int32_t x_zp, int32_t* scratch);

// What the epilogue adds and applies to the int32 sums of the shifted weights, per output channel.
struct ConvEpilogue {
  const int32_t* shift = nullptr;  // d - w_zp[m]: 1 or M values
  bool per_channel_shift = false;
  // to_float: y = float(acc) * scale[m] + bias[m], then Relu (ONNX Runtime's Cast, Mul, Add,
  // Relu, one rounding each). Else y = acc, int32.
  bool to_float = false;
  const float* scale = nullptr;  // 1 or M values
  bool per_channel_scale = false;
  const float* bias = nullptr;  // M values, or null
  bool relu = false;
};

// y holds the int32 sums of the shifted weights (plain N, M, spatial); adds shift[m] * sums and
// applies the epilogue in place (a float32 output takes the same bytes). On the OpenMP team.
void finish_shifted_conv(const WindowGeometry& g, const int32_t* sums, const ConvEpilogue& e, void* y);

}  // namespace memplan::rt::quant
