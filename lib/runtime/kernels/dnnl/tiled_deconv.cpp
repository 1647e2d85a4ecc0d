#include "runtime/kernels/dnnl/tiled_deconv.h"

#include <algorithm>

#include "memplan/error.h"
#include "runtime/kernels/common/eltwise_step.h"
#include "runtime/kernels/common/parallel_chunks.h"
#include "runtime/kernels/common/shape_common.h"
#include "runtime/kernels/common/simd_clones.h"

namespace memplan::rt::dnnl_kernels {
namespace {

// v8 (simd_clones.h): everything here is inlined into the clones.
#if defined(__GNUC__)  // GCC and clang
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

// 8 x NT input columns of one tile row for MB output channels: MB x NT x KW sums held in registers
// while the group's input channels stream past (each column vector loaded once for all of them),
// then written interleaved, column by column, into the channels' output rows. (Sums kept in memory
// for one channel at a time ran at 8 GMAC/s, half of this.) taps: W[0][mo][a][0] ([C][mg][kh][KW]),
// input channels c_stride and output channels j_stride apart.
template <int KW, int MB, int NT>
MEMPLAN_INLINE void tile_columns(const float* x, int64_t plane, int64_t cg, const float* taps, int64_t c_stride,
                                 int64_t j_stride, const float* bias, float* y, int64_t out_plane) {
  v8 sums[MB][NT][KW];
  for (int j = 0; j < MB; ++j)
    for (int v = 0; v < NT; ++v)
      for (int b = 0; b < KW; ++b) sums[j][v][b] = v8{} + bias[j];
  for (int64_t c = 0; c < cg; ++c) {
    v8 xv[NT];
    for (int v = 0; v < NT; ++v) xv[v] = load8(x + c * plane + 8 * v);
    const float* t = taps + c * c_stride;
    for (int j = 0; j < MB; ++j)
      for (int b = 0; b < KW; ++b) {
        const float tap = t[j * j_stride + b];
        for (int v = 0; v < NT; ++v) sums[j][v][b] += tap * xv[v];
      }
  }
  for (int j = 0; j < MB; ++j)
    for (int v = 0; v < NT; ++v) {
      float* out = y + j * out_plane + 8 * v * KW;
      if constexpr (KW == 1) {
        store8(out, sums[j][v][0]);
      } else if constexpr (KW == 2) {
        store8(out, __builtin_shufflevector(sums[j][v][0], sums[j][v][1], 0, 8, 1, 9, 2, 10, 3, 11));
        store8(out + 8, __builtin_shufflevector(sums[j][v][0], sums[j][v][1], 4, 12, 5, 13, 6, 14, 7, 15));
      } else {
        for (int t = 0; t < 8; ++t)
          for (int b = 0; b < KW; ++b) out[t * KW + b] = sums[j][v][b][t];
      }
    }
}

// One tile row `a` of one input row of a group (x: its first channel's row; channels `plane`
// apart; w columns) into the mg output channels' row (y: the first channel's; channels `out_plane`
// apart). taps: W[0][0][a][0] of the group; bias: the group's mg values (zeros when none). Eight
// vectors of sums: over several channels where the group has them, else over more columns.
template <int KW>
MEMPLAN_INLINE void tile_row(const float* x, int64_t plane, int64_t cg, int64_t w, const float* taps, int64_t mg,
                             int64_t kh, const float* bias, float* y, int64_t out_plane) {
  constexpr int kSums = KW >= 8 ? 1 : 8 / KW;
  const int64_t c_stride = mg * kh * KW, j_stride = kh * KW;
  // (Calls, not a lambda: a lambda's body is compiled for the baseline ISA, outside the clones.)
  int64_t mo = 0;
  for (; mo + kSums <= mg; mo += kSums)
    for (int64_t t = 0; t + 8 <= w; t += 8)
      tile_columns<KW, kSums, 1>(x + t, plane, cg, taps + mo * j_stride, c_stride, j_stride, bias + mo,
                                 y + mo * out_plane + t * KW, out_plane);
  for (; mo < mg; ++mo) {
    int64_t t = 0;
    for (; t + 8 * kSums <= w; t += 8 * kSums)
      tile_columns<KW, 1, kSums>(x + t, plane, cg, taps + mo * j_stride, c_stride, j_stride, bias + mo,
                                 y + mo * out_plane + t * KW, out_plane);
    for (; t + 8 <= w; t += 8)
      tile_columns<KW, 1, 1>(x + t, plane, cg, taps + mo * j_stride, c_stride, j_stride, bias + mo,
                             y + mo * out_plane + t * KW, out_plane);
  }
  const int64_t w8 = w / 8 * 8;
  for (mo = 0; mo < mg; ++mo)  // the last columns, fewer than eight
    for (int64_t t = w8; t < w; ++t)
      for (int b = 0; b < KW; ++b) {
        float sum = bias[mo];
        for (int64_t c = 0; c < cg; ++c) sum += taps[c * c_stride + mo * j_stride + b] * x[c * plane + t];
        y[mo * out_plane + t * KW + b] = sum;
      }
}

// tile_row for the kernel width at hand, compiled for each ISA.
MEMPLAN_SIMD_CLONES void tile_row_clone(const float* x, int64_t plane, int64_t cg, int64_t w, const float* taps,
                                        int64_t mg, int64_t kh, int64_t kw, const float* bias, float* y,
                                        int64_t out_plane) {
  switch (kw) {
    case 1: return tile_row<1>(x, plane, cg, w, taps, mg, kh, bias, y, out_plane);
    case 2: return tile_row<2>(x, plane, cg, w, taps, mg, kh, bias, y, out_plane);
    case 3: return tile_row<3>(x, plane, cg, w, taps, mg, kh, bias, y, out_plane);
    case 4: return tile_row<4>(x, plane, cg, w, taps, mg, kh, bias, y, out_plane);
    case 5: return tile_row<5>(x, plane, cg, w, taps, mg, kh, bias, y, out_plane);
    case 6: return tile_row<6>(x, plane, cg, w, taps, mg, kh, bias, y, out_plane);
    case 7: return tile_row<7>(x, plane, cg, w, taps, mg, kh, bias, y, out_plane);
    default: return tile_row<8>(x, plane, cg, w, taps, mg, kh, bias, y, out_plane);
  }
}

#if defined(__GNUC__)  // GCC and clang
#pragma GCC diagnostic pop
#endif

class TiledDeconvKernel final : public Kernel {
 public:
  TiledDeconvKernel(const TiledDeconv& s, std::string where)
      : s_(s), where_(std::move(where)), zeros_(static_cast<size_t>(s.m), 0.f) {}

  void run(const KernelArgs& args) override {
    const TensorView &xv = args.inputs[0], &wv = args.inputs[1];
    const int64_t cg = s_.c / s_.group, mg = s_.m / s_.group, plane = s_.h * s_.w;
    const int64_t ow = s_.w * s_.kw, out_plane = plane * s_.kh * s_.kw;
    const auto count = [](std::initializer_list<int64_t> dims) {
      uint64_t n = 1;
      for (int64_t d : dims) n *= static_cast<uint64_t>(d);
      return n;
    };
    if (xv.dtype != DType::Float32 || xv.element_count() != count({s_.n, s_.c, plane}))
      shape::fail_at(where_, "the input is not the compiled shape");
    if (wv.dtype != DType::Float32 || !wv.data || wv.element_count() != count({s_.c, mg, s_.kh, s_.kw}))
      shape::fail_at(where_, "the weights are not the compiled shape");
    const float* bias = zeros_.data();
    if (s_.bias) {
      const TensorView& bv = args.inputs[2];
      if (bv.dtype != DType::Float32 || !bv.data || bv.element_count() != static_cast<uint64_t>(s_.m))
        shape::fail_at(where_, "the bias is not one value per output channel");
      bias = bv.as<const float>();
    }
    const float* x = xv.as<const float>();
    const float* wt = wv.as<const float>();
    float* y = args.outputs[0].as<float>();
    // Units: one input row of one group of one image, which writes mg * kh output rows.
    const uint64_t units = count({s_.n, s_.group, s_.h});
    const uint64_t unit_bytes = count({mg, s_.kh, s_.w, s_.kw}) * sizeof(float);
    const uint64_t min_units = std::max<uint64_t>(1, kParallelChunkBytes / std::max<uint64_t>(unit_bytes, 1));
    parallel_chunks(units, min_units, [&](uint64_t begin, uint64_t end) {
      for (uint64_t u = begin; u < end; ++u) {
        const auto ih = static_cast<int64_t>(u % static_cast<uint64_t>(s_.h));
        const auto gi = static_cast<int64_t>(u / static_cast<uint64_t>(s_.h) % static_cast<uint64_t>(s_.group));
        const auto img = static_cast<int64_t>(u / static_cast<uint64_t>(s_.h * s_.group));
        const float* xs = x + (img * s_.c + gi * cg) * plane + ih * s_.w;
        float* ys = y + (img * s_.m + gi * mg) * out_plane + ih * s_.kh * ow;
        for (int64_t a = 0; a < s_.kh; ++a)
          tile_row_clone(xs, plane, cg, s_.w, wt + (gi * cg * mg * s_.kh + a) * s_.kw, mg, s_.kh, s_.kw,
                         bias + gi * mg, ys + a * ow, out_plane);
        for (const EltwiseStep& step : s_.steps)
          for (int64_t mo = 0; mo < mg; ++mo)
            apply_step(step, ys + mo * out_plane, static_cast<uint64_t>(s_.kh * ow));
      }
    });
  }
  std::string implementation() const override { return "memplan tiled deconvolution"; }

 private:
  TiledDeconv s_;
  std::string where_;
  std::vector<float> zeros_;  // the bias of a ConvTranspose without one
};

}  // namespace

std::unique_ptr<Kernel> make_tiled_deconv(const TiledDeconv& shape, std::string where) {
  const TiledDeconv& s = shape;
  if (s.group < 1 || s.c % s.group != 0 || s.m % s.group != 0 || s.kh < 1 || s.kw < 1 ||
      s.kh > kTiledDeconvMaxKernel || s.kw > kTiledDeconvMaxKernel)
    fail_internal(where + ": a tiled deconvolution takes whole groups and kernels of 1 to 8");
  return std::make_unique<TiledDeconvKernel>(shape, std::move(where));
}

}  // namespace memplan::rt::dnnl_kernels
