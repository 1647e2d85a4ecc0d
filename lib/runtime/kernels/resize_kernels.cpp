// Resize (opsets 10, 11, 13) and Upsample (7, 9) on float32: nearest on any dims, linear on the
// last two (bilinear on NCHW), with constant scales or sizes. Plain loops: oneDNN's resampling
// does not cover ONNX's coordinate transformation modes.
#include <algorithm>
#include <cmath>

#include "runtime/kernels/elementwise_common.h"

namespace memplan::rt::elt {
namespace {

enum class Coord { HalfPixel, PytorchHalfPixel, AlignCorners, Asymmetric, TfHalfPixelForNN };
enum class Nearest { RoundPreferFloor, RoundPreferCeil, Floor, Ceil, Simple };

float source_coord(Coord m, int64_t o, float scale, int64_t in_len, int64_t out_len) {
  const float x = static_cast<float>(o);
  switch (m) {
    case Coord::HalfPixel: return (x + 0.5f) / scale - 0.5f;
    case Coord::PytorchHalfPixel: return out_len > 1 ? (x + 0.5f) / scale - 0.5f : 0.f;
    case Coord::AlignCorners:
      return out_len == 1 ? 0.f : x * static_cast<float>(in_len - 1) / static_cast<float>(out_len - 1);
    case Coord::Asymmetric: return x / scale;
    case Coord::TfHalfPixelForNN: return (x + 0.5f) / scale;
  }
  return x;
}

int64_t nearest_index(Nearest m, float x, float scale, int64_t in_len) {
  int64_t i = 0;
  switch (m) {
    case Nearest::RoundPreferFloor:
      i = x == std::floor(x) + 0.5f ? static_cast<int64_t>(std::floor(x)) : static_cast<int64_t>(std::round(x));
      break;
    case Nearest::RoundPreferCeil: i = static_cast<int64_t>(std::round(x)); break;  // clamped below, so -0.5 is fine
    case Nearest::Floor: i = static_cast<int64_t>(std::floor(x)); break;
    case Nearest::Ceil: i = static_cast<int64_t>(std::ceil(x)); break;
    case Nearest::Simple: i = static_cast<int64_t>(scale < 1.f ? std::ceil(x) : std::floor(x)); break;
  }
  return std::clamp<int64_t>(i, 0, in_len - 1);
}

class ResizeKernel final : public Kernel {
 public:
  ResizeKernel(const Node& n, const KernelEnv& env, bool linear, Coord coord, Nearest nearest,
               std::vector<float> scales, std::vector<int64_t> sizes)
      : where_(where(n, env)), linear_(linear), coord_(coord), nearest_(nearest), scales_(std::move(scales)),
        sizes_(std::move(sizes)) {}

  void run(const KernelArgs& args) override {
    const TensorView& x = args.inputs[0];
    TensorView& y = args.outputs[0];
    const Shape in = Shape::of(x);
    const size_t given = sizes_.empty() ? scales_.size() : sizes_.size();
    if (given != static_cast<size_t>(in.rank))
      fail(where_ + ": " + std::to_string(given) + (sizes_.empty() ? " scales" : " sizes") + " for an input of rank " +
           std::to_string(in.rank));
    Shape out = in;
    std::array<float, kMaxRank> scale{};
    for (int d = 0; d < in.rank; ++d) {
      if (sizes_.empty()) {
        scale[d] = scales_[d];
        out.dims[d] = static_cast<int64_t>(static_cast<float>(in.dims[d]) * scale[d]);
      } else {
        out.dims[d] = sizes_[d];
        scale[d] = in.dims[d] ? static_cast<float>(out.dims[d]) / static_cast<float>(in.dims[d]) : 1.f;
      }
    }
    set_output_shape(y, out, where_);
    if (out.count() == 0) return;
    if (in.count() == 0) fail(where_ + ": cannot resize an empty input to shape " + out.str());
    if (linear_) return bilinear(x.as<float>(), in, y.as<float>(), out, scale);
    nearest(x.as<float>(), in, y.as<float>(), out, scale);
  }

 private:
  int64_t src_index(int d, int64_t o, const Shape& in, const Shape& out, const std::array<float, kMaxRank>& scale) const {
    // Unscaled dims map to themselves in every mode but tf_half_pixel_for_nn (o + 0.5).
    if (in.dims[d] == out.dims[d] && scale[d] == 1.f && coord_ != Coord::TfHalfPixelForNN) return o;
    return nearest_index(nearest_, source_coord(coord_, o, scale[d], in.dims[d], out.dims[d]), scale[d], in.dims[d]);
  }

  void nearest(const float* src, const Shape& in, float* dst, const Shape& out,
               const std::array<float, kMaxRank>& scale) const {
    const auto st = row_major_strides(in);
    const int last = in.rank - 1;
    if (last < 0) {
      dst[0] = src[0];
      return;
    }
    std::array<int64_t, kMaxRank> idx{};
    for (;;) {
      int64_t base = 0;
      for (int d = 0; d < last; ++d) base += src_index(d, idx[d], in, out, scale) * st[d];
      for (int64_t j = 0; j < out.dims[last]; ++j) *dst++ = src[base + src_index(last, j, in, out, scale)];
      int d = last - 1;
      while (d >= 0 && ++idx[d] == out.dims[d]) idx[d--] = 0;
      if (d < 0) return;
    }
  }

  // Linear interpolation on the last two dims (the last one alone for rank 1); the leading dims
  // must keep their size.
  void bilinear(const float* src, const Shape& in, float* dst, const Shape& out,
                const std::array<float, kMaxRank>& scale) const {
    const int r = in.rank;
    uint64_t planes = 1;
    for (int d = 0; d + 2 < r; ++d) {
      if (in.dims[d] != out.dims[d] || scale[d] != 1.f)
        fail_unsupported(where_ + ": linear resize of dimension " + std::to_string(d) +
                         " (only the last two dimensions are interpolated)");
      planes *= static_cast<uint64_t>(in.dims[d]);
    }
    const int64_t ih = r >= 2 ? in.dims[r - 2] : 1, oh = r >= 2 ? out.dims[r - 2] : 1;
    const int64_t iw = in.dims[r - 1], ow = out.dims[r - 1];
    const float sh = r >= 2 ? scale[r - 2] : 1.f, sw = scale[r - 1];
    auto axis = [&](int64_t o, float s, int64_t in_len, int64_t out_len, int64_t& i0, int64_t& i1, float& frac) {
      float c = source_coord(coord_, o, s, in_len, out_len);
      c = std::clamp(c, 0.f, static_cast<float>(in_len - 1));
      i0 = std::min(static_cast<int64_t>(c), in_len - 1);
      i1 = std::min(i0 + 1, in_len - 1);
      frac = c - static_cast<float>(i0);
    };
    for (uint64_t p = 0; p < planes; ++p) {
      const float* plane = src + p * static_cast<uint64_t>(ih * iw);
      for (int64_t oy = 0; oy < oh; ++oy) {
        int64_t y0, y1;
        float fy;
        axis(oy, sh, ih, oh, y0, y1, fy);
        const float* row0 = plane + y0 * iw;
        const float* row1 = plane + y1 * iw;
        for (int64_t ox = 0; ox < ow; ++ox) {
          int64_t x0, x1;
          float fx;
          axis(ox, sw, iw, ow, x0, x1, fx);
          const float top = row0[x0] + (row0[x1] - row0[x0]) * fx;
          const float bottom = row1[x0] + (row1[x1] - row1[x0]) * fx;
          *dst++ = top + (bottom - top) * fy;
        }
      }
    }
  }

  std::string where_;
  bool linear_;
  Coord coord_;
  Nearest nearest_;
  std::vector<float> scales_;  // empty when sizes_ is given
  std::vector<int64_t> sizes_;
};

const Tensor* constant_input(const Node& n, const KernelEnv& env, size_t k, const char* what) {
  if (n.inputs.size() <= k || !n.inputs[k]) return nullptr;
  const Value* v = n.inputs[k];
  if (!v->constant)
    fail_unsupported(where(n, env) + ": " + what + " input '" + v->name +
                     "' is computed at run time; only constant " + what + " are supported");
  return v->constant.get();
}

std::unique_ptr<Kernel> make_resize(const Node& n, const KernelEnv& env) {
  const std::string at = where(n, env);
  const bool upsample = n.op_type == "Upsample";
  if (n.inputs.empty() || !n.inputs[0]) fail(at + ": the input is missing");
  if (n.outputs.empty() || !n.outputs[0]) fail(at + ": the output is missing");
  const DType dt = n.inputs[0]->type.dtype;
  if (dt != DType::Float32) fail_unsupported(at + ": " + dtype_name(dt) + " input is not supported (float32 only)");
  const std::string mode = n.attr_string("mode", "nearest");
  const bool linear = mode == "linear" || mode == "bilinear";
  if (!linear && mode != "nearest") fail_unsupported(at + ": mode '" + mode + "' is not supported (nearest, linear)");

  // Opset 10 Resize and Upsample: asymmetric coordinates, floor (ceil when shrinking) for nearest.
  Coord coord = Coord::Asymmetric;
  Nearest nearest = Nearest::Simple;
  const bool v11 = !upsample && n.opset >= 11;
  if (v11) {
    const std::string c = n.attr_string("coordinate_transformation_mode", "half_pixel");
    if (c == "half_pixel") coord = Coord::HalfPixel;
    else if (c == "pytorch_half_pixel") coord = Coord::PytorchHalfPixel;
    else if (c == "align_corners") coord = Coord::AlignCorners;
    else if (c == "asymmetric") coord = Coord::Asymmetric;
    else if (c == "tf_half_pixel_for_nn") coord = Coord::TfHalfPixelForNN;
    else fail_unsupported(at + ": coordinate_transformation_mode '" + c + "' is not supported");
    const std::string nm = n.attr_string("nearest_mode", "round_prefer_floor");
    if (nm == "round_prefer_floor") nearest = Nearest::RoundPreferFloor;
    else if (nm == "round_prefer_ceil") nearest = Nearest::RoundPreferCeil;
    else if (nm == "floor") nearest = Nearest::Floor;
    else if (nm == "ceil") nearest = Nearest::Ceil;
    else fail_unsupported(at + ": nearest_mode '" + nm + "' is not supported");
  }

  std::vector<float> scales;
  std::vector<int64_t> sizes;
  if (upsample && n.opset < 9) {
    scales = n.attr(std::string("scales")) ? n.attr("scales")->floats : std::vector<float>{};
  } else {
    const Tensor* s = constant_input(n, env, v11 ? 2 : 1, "scales");
    if (s)
      for (uint64_t i = 0; i < s->element_count(); ++i) scales.push_back(static_cast<float>(s->float_at(i)));
    if (scales.empty() && v11)
      if (const Tensor* z = constant_input(n, env, 3, "sizes")) sizes = z->to_ints();
  }
  if (scales.empty() && sizes.empty()) fail(at + ": neither scales nor sizes is given");
  for (float s : scales)
    if (!(s > 0)) fail(at + ": scales must be positive, got " + std::to_string(s));
  for (int64_t s : sizes)
    if (s < 0) fail(at + ": sizes must not be negative, got " + std::to_string(s));
  return std::make_unique<ResizeKernel>(n, env, linear, coord, nearest, std::move(scales), std::move(sizes));
}

}  // namespace

void register_resize_kernels(KernelRegistry& r) {
  r.add("Resize", make_resize);
  r.add("Upsample", make_resize);
}

}  // namespace memplan::rt::elt
