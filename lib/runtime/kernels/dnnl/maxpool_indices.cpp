// MaxPool with its Indices output, which oneDNN's inference pooling does not give: a plain loop
// over the windows. An index is the flat position of the maximum in the whole input tensor
// (storage_order 1: the spatial axes counted column-major, as ONNX Runtime does); padding never
// wins, the first of equal maxima does.
#include <algorithm>
#include <array>
#include <limits>

#include "runtime/kernels/common/dnnl_common.h"
#include "runtime/kernels/dnnl/factories.h"

namespace memplan::rt::dnnl_kernels {
namespace {

constexpr size_t kMaxSpatial = 3;

class MaxPoolIndicesKernel final : public Kernel {
 public:
  MaxPoolIndicesKernel(const Dims& x, const Dims& y, const Window& w, bool column_major)
      : spatial_(x.size() - 2), column_major_(column_major) {
    planes_ = x[0] * x[1];
    for (size_t i = 0; i < spatial_; ++i) {
      in_[i] = x[i + 2];
      out_[i] = y[i + 2];
      kernel_[i] = w.kernel[i];
      stride_[i] = w.strides[i];
      dilation_[i] = w.dilations[i];
      pad_[i] = w.pads_begin[i];
    }
    for (size_t i = spatial_; i < kMaxSpatial; ++i) in_[i] = out_[i] = kernel_[i] = stride_[i] = dilation_[i] = 1;
  }

  void run(const KernelArgs& a) override {
    const float* x = a.inputs[0].as<const float>();
    float* y = a.outputs[0].as<float>();
    int64_t* idx = a.outputs[1].as<int64_t>();
    const int64_t in_plane = in_[0] * in_[1] * in_[2];
    for (int64_t p = 0; p < planes_; ++p)
      for (int64_t o0 = 0; o0 < out_[0]; ++o0)
        for (int64_t o1 = 0; o1 < out_[1]; ++o1)
          for (int64_t o2 = 0; o2 < out_[2]; ++o2) {
            const std::array<int64_t, kMaxSpatial> o{o0, o1, o2};
            float best = -std::numeric_limits<float>::infinity();
            int64_t at = -1;
            for (int64_t k0 = 0; k0 < kernel_[0]; ++k0)
              for (int64_t k1 = 0; k1 < kernel_[1]; ++k1)
                for (int64_t k2 = 0; k2 < kernel_[2]; ++k2) {
                  const std::array<int64_t, kMaxSpatial> k{k0, k1, k2};
                  int64_t flat = 0, col = 0, step = 1;  // row-major and column-major positions
                  bool inside = true;
                  for (size_t i = 0; i < spatial_ && inside; ++i) {
                    const int64_t c = o[i] * stride_[i] - pad_[i] + k[i] * dilation_[i];
                    inside = c >= 0 && c < in_[i];
                    flat = flat * in_[i] + c;
                    col += c * step;
                    step *= in_[i];
                  }
                  if (inside && (at < 0 || x[p * in_plane + flat] > best)) {
                    best = x[p * in_plane + flat];
                    at = column_major_ ? col : flat;
                  }
                }
            *y++ = best;  // a window wholly in the padding (pads as large as the kernel) gives -inf, index 0
            *idx++ = at < 0 ? 0 : p * in_plane + at;
          }
  }

 private:
  size_t spatial_;
  bool column_major_;
  int64_t planes_ = 0;
  std::array<int64_t, kMaxSpatial> in_{}, out_{}, kernel_{}, stride_{}, dilation_{}, pad_{};
};

}  // namespace

std::unique_ptr<Kernel> make_max_pool_with_indices(const Node& node, const KernelEnv& env) {
  const std::string at = where(node, env);
  check_arity(node, env, 1, 1, 2);
  const Value *xv = input_at(node, 0), *yv = output_at(node, 0), *iv = output_at(node, 1);
  for (const Value* v : {xv, yv, iv})
    if (!v->type.is_static() || v->shape_varies) fail_unsupported(at + ": '" + v->name + "' needs a static shape");
  if (xv->type.dtype != DType::Float32 || yv->type.dtype != DType::Float32)
    fail_unsupported(at + ": " + dtype_name(xv->type.dtype) + " is not supported with the Indices output, only float32");
  if (iv->type.dtype != DType::Int64) fail(at + ": the Indices output must be int64");
  const int64_t order = node.attr_int("storage_order", 0);
  if (order != 0 && order != 1) fail(at + ": storage_order must be 0 or 1");
  const Dims x = dims_of(xv), y = dims_of(yv);
  if (dims_of(iv) != y) fail(at + ": the Indices output's shape differs from the output's");
  if (x.size() < 3 || x.size() > 2 + kMaxSpatial)
    fail_unsupported(at + ": pooling a rank-" + std::to_string(x.size()) + " input is not supported (1-D, 2-D and 3-D only)");
  Window w = read_window(node, at, x.size() - 2, {});
  resolve_forward_pads(w, Dims(x.begin() + 2, x.end()));
  pool_end_pads(w, x, y, node.attr_int("ceil_mode", 0) != 0, at);  // validates the output size
  return std::make_unique<MaxPoolIndicesKernel>(x, y, w, order == 1);
}

}  // namespace memplan::rt::dnnl_kernels
