#include "runtime/kernels/dnnl/row_bands.h"

#include <omp.h>

#include <algorithm>

#include "memplan/error.h"

namespace memplan::rt::dnnl_kernels {

namespace {

uint64_t element_bytes(dnnl::memory::data_type t) { return dnnl_data_type_size(static_cast<dnnl_data_type_t>(t)); }

// The band of output rows [o0, o1).
BandShape band_shape(const RowBanding& r, int64_t o0, int64_t o1) {
  const int64_t lo = o0 * r.stride - r.pad_begin;
  const int64_t hi = (o1 - 1) * r.stride - r.pad_begin + r.extent - 1;
  const int64_t in_lo = std::max<int64_t>(lo, 0), in_hi = std::min(hi, r.x[2] - 1);
  return {in_hi - in_lo + 1, in_lo - lo, hi - in_hi, o1 - o0};
}

// `rows` rows of every channel of an [n, c, h, w] tensor of `type`, as a strided view from the
// band's first row.
dnnl::memory::desc rows_md(const Dims& d, int64_t rows, dnnl::memory::data_type type) {
  return dnnl::memory::desc({d[0], d[1], rows, d[3]}, type, Dims{d[1] * d[2] * d[3], d[2] * d[3], d[3], 1});
}

BandViews views(const RowBanding& r, const BandShape& s) {
  return {s, rows_md(r.x, s.in_rows, r.x_type), rows_md(r.y, s.out_rows, r.y_type)};
}

// Bytes from a band's first element to past its last: `rows` rows of an [n, c, h, w] tensor.
uint64_t reach(const Dims& d, int64_t rows, dnnl::memory::data_type type) {
  return static_cast<uint64_t>(((d[0] - 1) * d[1] * d[2] + (d[1] - 1) * d[2] + rows) * d[3]) * element_bytes(type);
}

// One kernel per band geometry, the bands run in `lanes`; null where a band lies wholly in the
// padding or has no kernel.
std::unique_ptr<BandedKernel> bands_of(const RowBanding& r, int64_t rows, bool lean, const MakeBandKernel& make,
                                       size_t lanes) {
  const int64_t oh = r.y[2];
  const uint64_t x_elt = element_bytes(r.x_type), y_elt = element_bytes(r.y_type);
  std::vector<BandedKernel::Part> parts;
  std::vector<BandedKernel::Band> bands;
  std::vector<BandShape> shapes;
  for (int64_t o0 = 0; o0 < oh; o0 += rows) {
    const BandShape s = band_shape(r, o0, std::min(oh, o0 + rows));
    if (s.in_rows < 1) return nullptr;
    auto it = std::find(shapes.begin(), shapes.end(), s);
    if (it == shapes.end()) {
      const BandViews v = views(r, s);
      std::unique_ptr<Kernel> k = make(v, lean);
      if (!k) return nullptr;
      parts.push_back({std::move(k), v.x.get_size(), v.y.get_size(), reach(r.x, s.in_rows, r.x_type),
                       reach(r.y, s.out_rows, r.y_type)});
      shapes.push_back(s);
      it = shapes.end() - 1;
    }
    const int64_t in_lo = o0 * r.stride - r.pad_begin + s.pad_top;
    bands.push_back({static_cast<size_t>(it - shapes.begin()), static_cast<uint64_t>(in_lo * r.x[3]) * x_elt,
                     static_cast<uint64_t>(o0 * r.y[3]) * y_elt});
  }
  lanes = std::min(lanes, bands.size());
  return std::make_unique<BandedKernel>(BandedKernel::Cut::Rows, std::move(parts), std::move(bands),
                                        static_cast<uint64_t>(product(r.x)) * x_elt,
                                        static_cast<uint64_t>(product(r.y)) * y_elt, r.addend, r.where, lanes,
                                        lanes > 1 ? r.engine : dnnl::engine());
}

// bands_of(), or null where oneDNN has no kernel for some band.
std::unique_ptr<BandedKernel> try_bands_of(const RowBanding& r, int64_t rows, bool lean, const MakeBandKernel& make,
                                           size_t lanes) {
  try {
    return bands_of(r, rows, lean, make, lanes);
  } catch (const Error&) {
    return nullptr;
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

// Bands in `lanes` whose kernels need at most `budget` scratchpad bytes in all; null where
// oneDNN has no kernel for some band.
std::unique_ptr<BandedKernel> under_budget(const RowBanding& r, uint64_t budget, const BandCost& cost,
                                           const MakeBandKernel& make, size_t lanes) {
  const int64_t oh = r.y[2];
  try {
    // The widest band (in the middle, no padding rows) mostly sets the scratchpad: halve the
    // rows until it fits. A band with padding rows may still need more (oneDNN can pick another
    // kernel for it): halve on until every band fits, or a band would lie wholly in the padding.
    const auto middle_cost = [&](int64_t rows) {
      const int64_t mid = std::min(oh - rows, oh / 2);
      return cost(views(r, band_shape(r, mid, mid + rows)));
    };
    const uint64_t per_lane = budget / lanes;
    int64_t rows = (oh + 1) / 2;
    while (rows > 1 && middle_cost(rows) > per_lane) rows = (rows + 1) / 2;
    std::unique_ptr<BandedKernel> k = bands_of(r, rows, false, make, lanes);
    while (k && rows > 1 && k->scratchpad_bytes() > budget) {
      rows = (rows + 1) / 2;
      std::unique_ptr<BandedKernel> thinner = try_bands_of(r, rows, false, make, lanes);
      if (!thinner) break;
      k = std::move(thinner);
    }
    return k;
  } catch (const Error&) {
    return nullptr;
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

}  // namespace

std::vector<std::unique_ptr<BandedKernel>> row_band_variants(const RowBanding& r, uint64_t have, const BandCost& cost,
                                                             const MakeBandKernel& make) {
  std::vector<std::unique_ptr<BandedKernel>> out;
  const int64_t oh = r.y.size() == 4 ? r.y[2] : 0;
  if (have <= kBandFloor || r.x.size() != 4 || oh < 2) return out;
  uint64_t last = have;
  const auto threads = static_cast<size_t>(std::max(omp_get_max_threads(), 1));
  const auto tall = [&](size_t parts) { return (oh + static_cast<int64_t>(parts) - 1) / static_cast<int64_t>(parts); };
  // Half the staged bytes, then a quarter: each band's staged copies are a share of the whole's,
  // and few calls keep the time (oneDNN's reorders of strided rows run slower per byte than of
  // whole tensors). Then bands under kBandFloor bytes, then a row per band on the leanest
  // kernels, one after another (the leanest of all).
  const auto variant_bands = [&](int variant, size_t lanes) {
    return variant == 0   ? try_bands_of(r, tall(2 * lanes), false, make, lanes)
           : variant == 1 ? try_bands_of(r, tall(4 * lanes), false, make, lanes)
           : variant == 2 ? under_budget(r, kBandFloor, cost, make, lanes)
                          : try_bands_of(r, 1, true, make, 1);
  };
  for (int variant = 0; variant < 4; ++variant) {
    if (variant == 2 && last <= kBandFloor) continue;  // the last variant fits the floor already
    // In lanes where they are leaner than the last variant (and fit the floor, for the bands
    // under it); else one after another: an output of few rows has no thinner bands to give
    // each lane.
    std::unique_ptr<BandedKernel> b = variant < 3 && threads > 1 ? variant_bands(variant, threads) : nullptr;
    if (!b || b->scratchpad_bytes() >= last || (variant == 2 && b->scratchpad_bytes() > kBandFloor))
      b = variant_bands(variant, 1);
    const bool leaner = b && b->scratchpad_bytes() < last;
    if (variant == 2 && out.empty() && !leaner) return out;  // no row per band where no other bands are leaner
    if (!leaner) continue;
    last = b->scratchpad_bytes();
    out.push_back(std::move(b));
  }
  return out;
}

}  // namespace memplan::rt::dnnl_kernels
