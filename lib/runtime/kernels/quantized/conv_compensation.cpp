#include "runtime/kernels/quantized/conv_compensation.h"

#include <algorithm>
#include <cstring>

#include "runtime/kernels/common/parallel_chunks.h"
#include "util/checked.h"

namespace memplan::rt::quant {
namespace {

constexpr const char* kWhat = "a ConvInteger's window sums";

// Items per chunk so that a chunk is worth a thread: kParallelChunkBytes of work at `bytes` each.
uint64_t chunk_items(uint64_t bytes) { return std::max<uint64_t>(1, kParallelChunkBytes / std::max<uint64_t>(bytes, 1)); }

// sums[q * in_size + i] = sum over the group's channels of x - x_zp, for rows [begin, end) of
// in[2] positions (q = n * group + g: the group's channels are consecutive planes of x).
template <typename T>
void channel_sums(const WindowGeometry& g, const T* x, int32_t x_zp, int32_t* sums, uint64_t begin, uint64_t end) {
  const auto cg = static_cast<uint64_t>(g.C / g.group), I = static_cast<uint64_t>(g.in_size()),
             width = static_cast<uint64_t>(g.in[2]), rows = static_cast<uint64_t>(g.in[0] * g.in[1]);
  const int32_t base = -static_cast<int32_t>(cg) * x_zp;
  for (uint64_t r = begin; r < end; ++r) {
    const uint64_t q = r / rows, at = (r % rows) * width;
    int32_t* out = sums + q * I + at;
    std::fill(out, out + width, base);
    for (uint64_t c = 0; c < cg; ++c) {
      const T* row = x + (q * cg + c) * I + at;
#pragma omp simd
      for (uint64_t w = 0; w < width; ++w) out[w] += row[w];
    }
  }
}

// sums[q * out_size + p] = the channel sums over the window of output position p, for output rows
// [begin, end) (a row: out[2] positions of one q, od, oh).
void box_sums(const WindowGeometry& g, const int32_t* channel, int32_t* sums, uint64_t begin, uint64_t end) {
  const int64_t rows = g.out[0] * g.out[1];
  for (uint64_t r = begin; r < end; ++r) {
    const int64_t q = static_cast<int64_t>(r) / rows, od = static_cast<int64_t>(r) % rows / g.out[1], oh = static_cast<int64_t>(r) % g.out[1];
    int32_t* out = sums + static_cast<int64_t>(r) * g.out[2];
    std::fill(out, out + g.out[2], 0);
    for_each_window_row(g, od, oh, [&](int64_t, int64_t, int64_t id, int64_t ih) {
      const int32_t* row = channel + (q * g.in_size() + (id * g.in[1] + ih) * g.in[2]);
      for (int64_t kw = 0; kw < g.k[2]; ++kw) {
        // Output columns whose tap kw lands inside the row: iw = ow * stride - pad + kw * dil.
        const int64_t shift = kw * g.dil[2] - g.pad[2], s = g.stride[2];
        const int64_t first = shift >= 0 ? 0 : (-shift + s - 1) / s;
        const int64_t span = g.in[2] - 1 - shift;
        const int64_t last = span < 0 ? 0 : std::min(g.out[2], span / s + 1);  // exclusive
        for (int64_t ow = first; ow < last; ++ow) out[ow] += row[ow * s + shift];
      }
    });
  }
}

// One output row's epilogue constants.
struct Row {
  int32_t shift;
  float scale, bias;
};

// The rows below go through a block of int32s on the stack: the output's bytes change type in
// place (int32 sums in, float32 out), so no two pointers of different types alias them. The sums
// wrap as int32 (they fit: the kernel's factory bounds the products per output).
constexpr uint64_t kBlock = 64;

inline int32_t shifted(int32_t acc, int32_t shift, int32_t window) {
  return static_cast<int32_t>(static_cast<uint32_t>(acc) + static_cast<uint32_t>(shift) * static_cast<uint32_t>(window));
}

void add_shift(unsigned char* y, const int32_t* window, uint64_t n, const Row& r) {
  int32_t a[kBlock];
  for (uint64_t at = 0; at < n; at += kBlock) {
    const uint64_t k = std::min(kBlock, n - at);
    std::memcpy(a, y + at * 4, k * 4);
#pragma omp simd
    for (uint64_t j = 0; j < k; ++j) a[j] = shifted(a[j], r.shift, window[at + j]);
    std::memcpy(y + at * 4, a, k * 4);
  }
}

// float(acc) * scale [+ bias], then Relu: ONNX Runtime's Cast, Mul, Add, Relu, one rounding each
// (no FMA: the same bits on every CPU).
template <bool Bias, bool Relu>
void to_float(unsigned char* y, const int32_t* window, uint64_t n, const Row& r) {
  int32_t a[kBlock];
  float f[kBlock];
  for (uint64_t at = 0; at < n; at += kBlock) {
    const uint64_t k = std::min(kBlock, n - at);
    std::memcpy(a, y + at * 4, k * 4);
#pragma omp simd
    for (uint64_t j = 0; j < k; ++j) {
      float v = static_cast<float>(shifted(a[j], r.shift, window[at + j])) * r.scale;
      if (Bias) v = v + r.bias;
      f[j] = Relu && v < 0.f ? 0.f : v;
    }
    std::memcpy(y + at * 4, f, k * 4);
  }
}

}  // namespace

WindowGeometry window_geometry(const GeometryDims& x, const GeometryDims& y, int64_t group, const GeometryDims& kernel,
                               const GeometryDims& strides, const GeometryDims& dilations, const GeometryDims& pads_begin) {
  WindowGeometry g;
  const size_t sp = x.size() - 2, off = 3 - sp;
  g.N = x[0];
  g.C = x[1];
  g.M = y[1];
  g.group = group;
  for (size_t i = 0; i < sp; ++i) {
    g.in[off + i] = x[2 + i];
    g.out[off + i] = y[2 + i];
    g.k[off + i] = kernel[i];
    g.stride[off + i] = strides[i];
    g.dil[off + i] = dilations[i];
    g.pad[off + i] = pads_begin[i];
  }
  return g;
}

uint64_t window_sums_scratch(const WindowGeometry& g) {
  const uint64_t planes = checked_mul(static_cast<uint64_t>(g.N), static_cast<uint64_t>(g.group), kWhat);
  return checked_add(checked_mul(planes, static_cast<uint64_t>(g.out_size()), kWhat),
                     checked_mul(planes, static_cast<uint64_t>(g.in_size()), kWhat), kWhat);
}

void window_sums(const WindowGeometry& g, const void* x, bool is_signed, int32_t x_zp, int32_t* scratch) {
  const auto planes = static_cast<uint64_t>(g.N * g.group);
  int32_t* sums = scratch;
  int32_t* channel = scratch + planes * static_cast<uint64_t>(g.out_size());
  const uint64_t in_rows = planes * static_cast<uint64_t>(g.in[0] * g.in[1]);
  const uint64_t row_bytes = static_cast<uint64_t>(g.C / g.group * g.in[2]);
  parallel_chunks(in_rows, chunk_items(row_bytes), [&](uint64_t b, uint64_t e) {
    if (is_signed) channel_sums(g, static_cast<const int8_t*>(x), x_zp, channel, b, e);
    else channel_sums(g, static_cast<const uint8_t*>(x), x_zp, channel, b, e);
  });
  const uint64_t out_rows = planes * static_cast<uint64_t>(g.out[0] * g.out[1]);
  parallel_chunks(out_rows, chunk_items(static_cast<uint64_t>(g.out[2] * g.k[0] * g.k[1] * g.k[2]) * 4),
                  [&](uint64_t b, uint64_t e) { box_sums(g, channel, sums, b, e); });
}

void finish_shifted_conv(const WindowGeometry& g, const int32_t* sums, const ConvEpilogue& e, void* y) {
  const auto P = static_cast<uint64_t>(g.out_size()), M = static_cast<uint64_t>(g.M);
  const uint64_t per_group = M / static_cast<uint64_t>(g.group);
  auto* bytes = static_cast<unsigned char*>(y);
  parallel_chunks(static_cast<uint64_t>(g.N) * M * P, kParallelChunkBytes / 4, [&](uint64_t begin, uint64_t end) {
    for (uint64_t i = begin; i < end;) {
      // One plane (n, m) at a time, from i to the plane's end or the chunk's.
      const uint64_t plane = i / P, m = plane % M, n = plane / M, stop = std::min(end, (plane + 1) * P);
      const int32_t* window = sums + (n * static_cast<uint64_t>(g.group) + m / per_group) * P + (i - plane * P);
      Row row{e.shift[e.per_channel_shift ? m : 0], e.to_float ? e.scale[e.per_channel_scale ? m : 0] : 0.f,
              e.bias ? e.bias[m] : 0.f};
      unsigned char* out = bytes + i * 4;
      const uint64_t count = stop - i;
      if (!e.to_float) add_shift(out, window, count, row);
      else if (e.bias && e.relu) to_float<true, true>(out, window, count, row);
      else if (e.bias) to_float<true, false>(out, window, count, row);
      else if (e.relu) to_float<false, true>(out, window, count, row);
      else to_float<false, false>(out, window, count, row);
      i = stop;
    }
  });
}

}  // namespace memplan::rt::quant
