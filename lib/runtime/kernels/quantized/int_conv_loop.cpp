#include "runtime/kernels/quantized/int_conv_loop.h"

#include <algorithm>

#include "runtime/kernels/common/parallel_chunks.h"
#include "runtime/kernels/common/simd_clones.h"

namespace memplan::rt::quant {
namespace {

// Output channels summed in one pass over x: each x element loaded feeds this many products.
constexpr int kChannels = 4;
// Output columns whose sums a pass keeps on the stack (kChannels x kTile int32s: 4 KB).
constexpr int64_t kTile = 256;

struct Sums {
  int32_t v[kChannels][kTile];
};

// sums[j][ow - first] += (x[ow * stride + shift] - x_zero) * wv[j] for ow in [lo, hi).
template <typename XT, bool unit_stride>
MEMPLAN_INLINE void accumulate(const XT* row, int64_t shift, int64_t stride, int64_t lo, int64_t hi, int64_t first,
                               int32_t x_zero, const int32_t (&wv)[kChannels], Sums& s) {
  if (hi <= lo) return;
  // Column ow of the tile is sums[ow - first], reading x at ow * stride + shift.
  const XT* x = row + (lo * stride + shift);
  int32_t* s0 = s.v[0] + (lo - first);
  int32_t* s1 = s.v[1] + (lo - first);
  int32_t* s2 = s.v[2] + (lo - first);
  int32_t* s3 = s.v[3] + (lo - first);
  const int32_t w0 = wv[0], w1 = wv[1], w2 = wv[2], w3 = wv[3];
  const int64_t n = hi - lo;
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const int32_t xv = static_cast<int32_t>(x[unit_stride ? i : i * stride]) - x_zero;
    s0[i] += xv * w0;
    s1[i] += xv * w1;
    s2[i] += xv * w2;
    s3[i] += xv * w3;
  }
}

// Output rows [begin, end) of the job: a row is one (image, group, block of kChannels output
// channels, od, oh), all its columns.
template <typename XT>
MEMPLAN_INLINE void rows(const IntConvJob& job, uint64_t begin, uint64_t end) {
  const WindowGeometry& g = *job.geometry;
  const XT* x = job.x->as<const XT>();
  const TensorView& w = *job.w;
  const int64_t cg = g.C / g.group, mg = g.M / g.group;
  const int64_t blocks = (mg + kChannels - 1) / kChannels, out_rows = g.out[0] * g.out[1];
  const int64_t ksize = g.k[0] * g.k[1] * g.k[2], isize = g.in_size(), width = g.out[2];
  const int64_t s = g.stride[2];
  Sums sums;
  for (uint64_t r = begin; r < end; ++r) {
    const auto u = static_cast<int64_t>(r);
    const int64_t od = u % out_rows / g.out[1], oh = u % g.out[1];
    const int64_t block = u / out_rows % blocks, q = u / out_rows / blocks;  // q = image * group + grp
    const int64_t b = q / g.group, grp = q % g.group;
    const int64_t m0 = grp * mg + block * kChannels, count = std::min<int64_t>(kChannels, grp * mg + mg - m0);
    int32_t zero[kChannels] = {};
    for (int64_t j = 0; j < count; ++j) zero[j] = job.w_zero->zero(static_cast<uint64_t>(m0 + j));
    for (int64_t first = 0; first < width; first += kTile) {
      const int64_t last = std::min(width, first + kTile);
      for (auto& c : sums.v) std::fill(c, c + (last - first), 0);
      for (int64_t c = 0; c < cg; ++c) {
        const XT* plane = x + (b * g.C + grp * cg + c) * isize;
        for_each_window_row(g, od, oh, [&](int64_t kd, int64_t kh, int64_t id, int64_t ih) {
          const XT* row = plane + (id * g.in[1] + ih) * g.in[2];
          for (int64_t kw = 0; kw < g.k[2]; ++kw) {
            int32_t wv[kChannels] = {};
            for (int64_t j = 0; j < count; ++j)
              wv[j] = qint_at(w, static_cast<uint64_t>(((m0 + j) * cg + c) * ksize + (kd * g.k[1] + kh) * g.k[2] + kw)) - zero[j];
            // Columns whose tap kw lands inside the row: iw = ow * s + shift.
            const int64_t shift = kw * g.dil[2] - g.pad[2];
            const int64_t lo = std::max(first, shift >= 0 ? 0 : (-shift + s - 1) / s);
            const int64_t span = g.in[2] - 1 - shift;
            const int64_t hi = span < 0 ? lo : std::min(last, span / s + 1);
            if (s == 1)
              accumulate<XT, true>(row, shift, s, lo, hi, first, job.x_zero, wv, sums);
            else
              accumulate<XT, false>(row, shift, s, lo, hi, first, job.x_zero, wv, sums);
          }
        });
      }
      const uint64_t at = static_cast<uint64_t>(((b * g.M + m0) * out_rows + od * g.out[1] + oh) * width + first);
      for (int64_t j = 0; j < count; ++j)
        job.sink(job.context, at + static_cast<uint64_t>(j * out_rows * width), m0 + j, sums.v[j], last - first);
    }
  }
}

MEMPLAN_SIMD_CLONES void run_rows(const IntConvJob& job, uint64_t begin, uint64_t end) {
  if (job.x->dtype == DType::Uint8)
    rows<uint8_t>(job, begin, end);
  else
    rows<int8_t>(job, begin, end);
}

}  // namespace

void run_int_conv(const IntConvJob& job) {
  const WindowGeometry& g = *job.geometry;
  const int64_t mg = g.M / g.group;
  const auto rows_total = static_cast<uint64_t>(g.N * g.group * ((mg + kChannels - 1) / kChannels) * g.out[0] * g.out[1]);
  // A row's work: its columns times the window's taps over the group's channels.
  const auto row_work = static_cast<uint64_t>(std::max<int64_t>(1, g.out[2] * (g.C / g.group) * g.k[0] * g.k[1] * g.k[2]));
  parallel_chunks(rows_total, std::max<uint64_t>(1, kParallelChunkBytes / row_work),
                  [&](uint64_t begin, uint64_t end) { run_rows(job, begin, end); });
}

}  // namespace memplan::rt::quant
