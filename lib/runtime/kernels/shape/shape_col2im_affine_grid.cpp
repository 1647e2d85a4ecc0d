// Col2Im (opset 18): the column blocks of an im2col, [N, C * prod(block), L], summed back into
// an image [N, C, H, W] (overlapping blocks add), with strides, pads and dilations; 2-D images.
// AffineGrid (opset 20): the sampling grid of an affine transform, [N, H, W, 2] (or, 3-D,
// [N, D, H, W, 3]), for GridSample: theta times each output position's normalized coordinates.
#include <algorithm>
#include <array>
#include <vector>

#include "runtime/kernels/common/shape_common.h"
#include "runtime/kernels/shape/factories.h"

namespace memplan::rt::shape {
namespace {

class Col2ImKernel final : public Kernel {
 public:
  Col2ImKernel(std::string where, std::vector<int64_t> image, std::vector<int64_t> block, std::vector<int64_t> strides,
               std::vector<int64_t> pads, std::vector<int64_t> dilations)
      : where_(std::move(where)), image_(std::move(image)), block_(std::move(block)), strides_(std::move(strides)),
        pads_(std::move(pads)), dilations_(std::move(dilations)) {
    for (size_t d = 0; d < 2; ++d) {
      const int64_t span = dilations_[d] * (block_[d] - 1) + 1, padded = image_[d] + pads_[d] + pads_[d + 2];
      if (block_[d] < 1 || strides_[d] < 1 || dilations_[d] < 1 || padded < span)
        fail_at(where_, "the block does not fit the padded image");
      blocks_[d] = (padded - span) / strides_[d] + 1;
    }
  }

  void run(const KernelArgs& a) override {
    const TensorView& x = a.inputs[0];
    const int64_t kernel = block_[0] * block_[1];
    if (x.rank != 3 || x.dims[1] % kernel != 0 || x.dims[2] != blocks_[0] * blocks_[1])
      fail_at(where_, "the input must be [N, C * " + std::to_string(kernel) + ", " + std::to_string(blocks_[0] * blocks_[1]) + "]");
    const int64_t n = x.dims[0], c = x.dims[1] / kernel, h = image_[0], w = image_[1];
    const int64_t dims[4] = {n, c, h, w};
    set_shape(a.outputs[0], 4, dims, where_);
    const float* in = x.as<const float>();
    float* out = a.outputs[0].as<float>();
    std::fill(out, out + n * c * h * w, 0.f);
    for (int64_t img = 0; img < n * c; ++img)
      for (int64_t kh = 0; kh < block_[0]; ++kh)
        for (int64_t kw = 0; kw < block_[1]; ++kw) {
          const float* col = in + (img * kernel + kh * block_[1] + kw) * blocks_[0] * blocks_[1];
          float* plane = out + img * h * w;
          for (int64_t bh = 0; bh < blocks_[0]; ++bh) {
            const int64_t r = bh * strides_[0] - pads_[0] + kh * dilations_[0];
            if (r < 0 || r >= h) continue;
            for (int64_t bw = 0; bw < blocks_[1]; ++bw) {
              const int64_t q = bw * strides_[1] - pads_[1] + kw * dilations_[1];
              if (q >= 0 && q < w) plane[r * w + q] += col[bh * blocks_[1] + bw];
            }
          }
        }
  }

 private:
  std::string where_;
  std::vector<int64_t> image_, block_, strides_, pads_, dilations_;
  int64_t blocks_[2] = {0, 0};
};

class AffineGridKernel final : public Kernel {
 public:
  AffineGridKernel(std::string where, std::vector<int64_t> size, bool align)
      : where_(std::move(where)), size_(std::move(size)), align_(align) {}

  // Position i of n along an axis, in [-1, 1]: pixel centers (align_corners) or pixel edges.
  float coordinate(int64_t i, int64_t n) const {
    if (n == 1) return align_ ? -1.f : 0.f;  // numpy's linspace(-1, 1, 1), as ONNX's reference
    return align_ ? -1.f + 2.f * static_cast<float>(i) / static_cast<float>(n - 1)
                  : -1.f + (2.f * static_cast<float>(i) + 1.f) / static_cast<float>(n);
  }

  void run(const KernelArgs& a) override {
    const TensorView& theta = a.inputs[0];
    const auto spatial = static_cast<int64_t>(size_.size()) - 2;  // 2 or 3
    const int64_t n = size_[0];
    if (theta.rank != 3 || theta.dims[0] != n || theta.dims[1] != spatial || theta.dims[2] != spatial + 1)
      fail_at(where_, "theta must be [N, " + std::to_string(spatial) + ", " + std::to_string(spatial + 1) + "]");
    std::array<int64_t, 5> dims{n};  // [N, spatial..., spatial rank]: no heap in a run
    std::copy(size_.begin() + 2, size_.end(), dims.begin() + 1);
    dims[static_cast<size_t>(spatial) + 1] = spatial;
    set_shape(a.outputs[0], static_cast<int>(spatial) + 2, dims.data(), where_);
    const float* t = theta.as<const float>();
    float* out = a.outputs[0].as<float>();
    const int64_t d_len = spatial == 3 ? size_[2] : 1, h_len = size_[size_.size() - 2], w_len = size_.back();
    for (int64_t b = 0; b < n; ++b)
      for (int64_t z = 0; z < d_len; ++z)
        for (int64_t y = 0; y < h_len; ++y)
          for (int64_t x = 0; x < w_len; ++x) {
            // (x, y[, z], 1) in normalized coordinates, times each row of theta.
            const float base[4] = {coordinate(x, w_len), coordinate(y, h_len), spatial == 3 ? coordinate(z, d_len) : 1.f, 1.f};
            for (int64_t r = 0; r < spatial; ++r) {
              const float* row = t + (b * spatial + r) * (spatial + 1);
              float v = 0;
              for (int64_t k = 0; k <= spatial; ++k) v += row[k] * base[k == spatial ? 3 : k];
              *out++ = v;
            }
          }
  }

 private:
  std::string where_;
  std::vector<int64_t> size_;
  bool align_;
};

std::vector<int64_t> constant_list(const Node& n, size_t i, const std::string& where, const char* what) {
  const Value* v = input_at(n, i);
  if (!v || !v->constant) unsupported_at(where, std::string("its ") + what + " must be a constant");
  return v->constant->to_ints();
}

std::vector<int64_t> ints_or(const Node& n, const char* name, std::vector<int64_t> fallback) {
  std::vector<int64_t> v = n.attr_ints(name);
  return v.empty() ? fallback : v;
}

}  // namespace

Factory make_col2im(const Node& n, const KernelEnv& env) {
  std::string where = check_arity(n, env, 3, 3);
  if (n.inputs[0]->type.dtype != DType::Float32) unsupported_at(where, "float32 input only");
  std::vector<int64_t> image = constant_list(n, 1, where, "image_shape"), block = constant_list(n, 2, where, "block_shape");
  if (image.size() != 2 || block.size() != 2) unsupported_at(where, "2-D images only");
  std::vector<int64_t> strides = ints_or(n, "strides", {1, 1}), pads = ints_or(n, "pads", {0, 0, 0, 0}),
                       dilations = ints_or(n, "dilations", {1, 1});
  if (strides.size() != 2 || pads.size() != 4 || dilations.size() != 2)
    fail_at(where, "strides and dilations need 2 values, pads 4");
  return std::make_unique<Col2ImKernel>(std::move(where), image, block, strides, pads, dilations);
}

Factory make_affine_grid(const Node& n, const KernelEnv& env) {
  std::string where = check_arity(n, env, 2, 2);
  if (n.inputs[0]->type.dtype != DType::Float32) unsupported_at(where, "float32 theta only");
  std::vector<int64_t> size = constant_list(n, 1, where, "size");
  if (size.size() != 4 && size.size() != 5) fail_at(where, "size must be [N, C, H, W] or [N, C, D, H, W]");
  for (int64_t d : size)
    if (d < 1) fail_at(where, "size must be positive");
  return std::make_unique<AffineGridKernel>(std::move(where), size, n.attr_int("align_corners", 0) != 0);
}

}  // namespace memplan::rt::shape
