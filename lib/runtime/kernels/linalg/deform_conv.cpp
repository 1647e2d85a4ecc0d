// DeformConv (opset 19, 22): a 2-D convolution whose every tap is read at a learned fractional
// offset, bilinearly interpolated (zeros outside the image) and optionally scaled by a mask:
//
//   Y[n, o, p] = B[o] + sum over c in o's group, kernel tap k:
//                W[o, c, k] * mask[n, g_c * K + k, p] * X[n, c](tap(k, p) + offset[n, g_c, k, p])
//
// where g_c is c's offset group, K = kH * kW, and offset[n, g, k, p] is the pair
// (offset[n, (g * K + k) * 2, p], offset[n, (g * K + k) * 2 + 1, p]) along height and width.
// As ONNX's reference and ONNX Runtime compute it: the samples of a tile of output pixels go into
// a column matrix [C / group * K, tile] in the planned scratchpad (at most kColumnBytes), then each
// output channel of the group is a dot product of its weights with those columns. Samples and
// output channels are split over the run's threads.
#include <algorithm>
#include <cmath>

#include "runtime/kernels/common/dnnl_common.h"
#include "runtime/kernels/common/parallel_chunks.h"
#include "runtime/kernels/linalg/factories.h"

namespace memplan::rt::norm {
using namespace dnnl_kernels;  // the window, shape and type checks the convolutions share
namespace {

constexpr uint64_t kColumnBytes = 256 * 1024;  // one tile's samples: an L2 cache's worth

struct DeformGeometry {
  int64_t batch = 0, channels = 0, height = 0, width = 0;
  int64_t out_channels = 0, out_height = 0, out_width = 0;
  int64_t kernel_h = 0, kernel_w = 0, group = 1, offset_group = 1;
  int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dilation_h = 1, dilation_w = 1;
  int64_t taps() const { return kernel_h * kernel_w; }
  int64_t rows() const { return channels / group * taps(); }  // a group's column rows
  int64_t pixels() const { return out_height * out_width; }
};

// X's plane at (h, w), bilinear, zero outside; a NaN or far-away position reads 0.
float bilinear(const float* plane, int64_t height, int64_t width, float h, float w) {
  if (!(h > -1.f && h < static_cast<float>(height) && w > -1.f && w < static_cast<float>(width))) return 0.f;
  const auto h0 = static_cast<int64_t>(std::floor(h)), w0 = static_cast<int64_t>(std::floor(w));
  const float lh = h - static_cast<float>(h0), lw = w - static_cast<float>(w0), hh = 1.f - lh, hw = 1.f - lw;
  const bool top = h0 >= 0, bottom = h0 + 1 < height, left = w0 >= 0, right = w0 + 1 < width;
  const float* row = plane + h0 * width;
  const float v1 = top && left ? row[w0] : 0.f, v2 = top && right ? row[w0 + 1] : 0.f;
  const float v3 = bottom && left ? row[width + w0] : 0.f, v4 = bottom && right ? row[width + w0 + 1] : 0.f;
  return hh * hw * v1 + hh * lw * v2 + lh * hw * v3 + lh * lw * v4;
}

class DeformConvKernel final : public Kernel {
 public:
  DeformConvKernel(const DeformGeometry& g, bool has_bias, bool has_mask)
      : g_(g), has_bias_(has_bias), has_mask_(has_mask) {
    tile_ = std::clamp<int64_t>(static_cast<int64_t>(kColumnBytes / sizeof(float) / static_cast<uint64_t>(g.rows())), 16,
                                g.pixels());
  }

  uint64_t scratchpad_bytes() const override {
    return static_cast<uint64_t>(g_.rows()) * static_cast<uint64_t>(tile_) * sizeof(float);
  }

  void run(const KernelArgs& a) override {
    const float* x = a.inputs[0].as<const float>();
    const float* w = a.inputs[1].as<const float>();
    const float* offset = a.inputs[2].as<const float>();
    const float* bias = has_bias_ ? a.inputs[3].as<const float>() : nullptr;
    const float* mask = has_mask_ ? a.inputs[4].as<const float>() : nullptr;
    float* y = a.outputs[0].as<float>();
    auto* columns = reinterpret_cast<float*>(a.scratchpad);
    const int64_t taps = g_.taps(), rows = g_.rows(), pixels = g_.pixels();
    const int64_t group_channels = g_.channels / g_.group, group_outputs = g_.out_channels / g_.group;
    const int64_t channels_per_offset = g_.channels / g_.offset_group, plane = g_.height * g_.width;
    for (int64_t n = 0; n < g_.batch; ++n)
      for (int64_t grp = 0; grp < g_.group; ++grp)
        for (int64_t p0 = 0; p0 < pixels; p0 += tile_) {
          const int64_t count = std::min(tile_, pixels - p0);
          // The samples: row r = (channel of the group, tap), one column per output pixel.
          parallel_chunks(static_cast<uint64_t>(rows), std::max<uint64_t>(1, kParallelChunkBytes / 16 / static_cast<uint64_t>(count)),
                          [&](uint64_t begin, uint64_t end) {
            for (auto r = static_cast<int64_t>(begin); r < static_cast<int64_t>(end); ++r) {
              const int64_t c = grp * group_channels + r / taps, k = r % taps;
              const int64_t og = c / channels_per_offset;
              const int64_t ki = k / g_.kernel_w, kj = k % g_.kernel_w;
              const float* xs = x + (n * g_.channels + c) * plane;
              const float* dy = offset + ((n * g_.offset_group + og) * taps + k) * 2 * pixels;
              const float* dx = dy + pixels;
              const float* m = mask ? mask + ((n * g_.offset_group + og) * taps + k) * pixels : nullptr;
              float* col = columns + r * tile_;
              for (int64_t q = 0; q < count; ++q) {
                const int64_t p = p0 + q, oh = p / g_.out_width, ow = p % g_.out_width;
                const float h = static_cast<float>(oh * g_.stride_h - g_.pad_h + ki * g_.dilation_h) + dy[p];
                const float wpos = static_cast<float>(ow * g_.stride_w - g_.pad_w + kj * g_.dilation_w) + dx[p];
                const float v = bilinear(xs, g_.height, g_.width, h, wpos);
                col[q] = m ? v * m[p] : v;
              }
            }
          });
          // Each output channel of the group: its weights against the columns.
          parallel_chunks(static_cast<uint64_t>(group_outputs),
                          std::max<uint64_t>(1, kParallelChunkBytes / 4 / static_cast<uint64_t>(rows * count)),
                          [&](uint64_t begin, uint64_t end) {
            for (auto j = static_cast<int64_t>(begin); j < static_cast<int64_t>(end); ++j) {
              const int64_t o = grp * group_outputs + j;
              float* out = y + (n * g_.out_channels + o) * pixels + p0;
              std::fill(out, out + count, bias ? bias[o] : 0.f);
              const float* wrow = w + o * rows;
              for (int64_t r = 0; r < rows; ++r) {
                const float wv = wrow[r];
                const float* col = columns + r * tile_;
                for (int64_t q = 0; q < count; ++q) out[q] += wv * col[q];
              }
            }
          });
        }
  }

 private:
  DeformGeometry g_;
  bool has_bias_, has_mask_;
  int64_t tile_ = 1;
};

}  // namespace

std::unique_ptr<Kernel> make_deform_conv(const Node& node, const KernelEnv& env) {
  const std::string at = check_arity(node, env, 3, 5);
  require_float32_static(node, env);
  const Value *xv = input_at(node, 0), *wv = input_at(node, 1), *ov = input_at(node, 2), *bv = input_at(node, 3),
              *mv = input_at(node, 4);
  const Dims x = dims_of(xv), w = dims_of(wv), off = dims_of(ov), y = dims_of(output_at(node, 0));
  if (x.size() != 4 || w.size() != 4 || off.size() != 4 || y.size() != 4)
    fail_unsupported(at + ": only 2-D deformable convolutions ([N, C, H, W]) are supported");
  DeformGeometry g;
  g.batch = x[0], g.channels = x[1], g.height = x[2], g.width = x[3];
  g.out_channels = w[0], g.out_height = y[2], g.out_width = y[3];
  g.group = node.attr_int("group", 1), g.offset_group = node.attr_int("offset_group", 1);
  if (g.group < 1 || g.offset_group < 1 || g.channels % g.group != 0 || g.out_channels % g.group != 0 ||
      g.channels % g.offset_group != 0)
    fail(at + ": group " + std::to_string(g.group) + " and offset_group " + std::to_string(g.offset_group) +
         " must divide the input's " + std::to_string(g.channels) + " channels (and group the " +
         std::to_string(g.out_channels) + " outputs)");
  if (w[1] != g.channels / g.group)
    fail(at + ": weights " + dims_string(w) + " need " + std::to_string(g.channels / g.group) + " input channels a group");
  Window win = read_window(node, at, 2, Dims(w.begin() + 2, w.end()));
  for (size_t i = 0; i < 2; ++i)
    if (win.kernel[i] > (int64_t{1} << 20) || win.dilations[i] > (int64_t{1} << 20) || win.strides[i] > (int64_t{1} << 20) ||
        win.pads_begin[i] > (int64_t{1} << 20) || win.pads_end[i] > (int64_t{1} << 20))
      fail(at + ": kernel_shape, strides, dilations or pads above 2^20");
  g.kernel_h = win.kernel[0], g.kernel_w = win.kernel[1];
  g.stride_h = win.strides[0], g.stride_w = win.strides[1];
  g.dilation_h = win.dilations[0], g.dilation_w = win.dilations[1];
  g.pad_h = win.pads_begin[0], g.pad_w = win.pads_begin[1];
  for (size_t i = 0; i < 2; ++i) {
    const int64_t span = x[i + 2] + win.pads_begin[i] + win.pads_end[i] - ((win.kernel[i] - 1) * win.dilations[i] + 1);
    if (span < 0 || y[i + 2] != span / win.strides[i] + 1)
      fail(at + ": output shape " + dims_string(y) + " does not follow from the input " + dims_string(x) +
           " and the window");
  }
  if (y[0] != g.batch || y[1] != g.out_channels) fail(at + ": output shape " + dims_string(y) + " does not fit");
  const Dims want_offset{g.batch, g.offset_group * 2 * g.taps(), g.out_height, g.out_width};
  if (off != want_offset) fail(at + ": offset " + dims_string(off) + " must be " + dims_string(want_offset));
  if (bv && dims_of(bv) != Dims{g.out_channels}) fail(at + ": bias " + dims_string(dims_of(bv)) + " must be [" + std::to_string(g.out_channels) + "]");
  const Dims want_mask{g.batch, g.offset_group * g.taps(), g.out_height, g.out_width};
  if (mv && dims_of(mv) != want_mask) fail(at + ": mask " + dims_string(dims_of(mv)) + " must be " + dims_string(want_mask));
  if (empty_output(node)) return std::make_unique<NoopKernel>();
  if (g.rows() == 0) fail_unsupported(at + ": a convolution over no input channels is not supported");
  return std::make_unique<DeformConvKernel>(g, bv != nullptr, mv != nullptr);
}

}  // namespace memplan::rt::norm
