// Cuts a 2-D convolution on plain (NCHW) tensors into bands of output rows (BandedKernel::Cut::Rows):
// each band a kernel of its own, on strided views of its input and output rows in the whole
// tensors, whose staged copies and scratchpad hold one band. The float convolution (dnnl_conv.cpp)
// and the int8 one (quantized/dnnl_qconv.cpp) make their band kernels; this file chooses the
// bands, their geometries and views.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/kernels/common/dnnl_common.h"
#include "runtime/kernels/dnnl/banded_kernel.h"

namespace memplan::rt::dnnl_kernels {

// Scratchpad bytes below which a convolution is not cut into bands: its primitive calls would
// cost more than the bytes are worth.
inline constexpr uint64_t kBandFloor = 64 * 1024;

// The convolution the bands cut: its tensors and its window along the rows.
struct RowBanding {
  Dims x, y;  // [n, c, h, w] and [n, m, oh, ow]
  dnnl::memory::data_type x_type = dnnl::memory::data_type::f32, y_type = dnnl::memory::data_type::f32;
  int64_t stride = 1, pad_begin = 0;
  int64_t extent = 1;  // the kernel's height, dilated
  int addend = -1;     // the input a fused Add reads with the output's geometry, or -1
  std::string where;
  dnnl::engine engine;  // the lanes' streams (BandedKernel)
};

// A band of output rows: the input rows it reads, the padding rows above and below them, and
// the output rows it writes.
struct BandShape {
  int64_t in_rows = 0, pad_top = 0, pad_bottom = 0, out_rows = 0;
  bool operator==(const BandShape&) const = default;
};

// What a band's kernel is made for: its shape, and its input and output rows as strided
// descriptors into the whole tensors.
struct BandViews {
  BandShape shape;
  dnnl::memory::desc x, y;
};

// The kernel for one band (with `lean`, on its leanest implementation), or null where there is
// none worth running (the bands are then not made). May throw Error or dnnl::error: the same.
using MakeBandKernel = std::function<std::unique_ptr<Kernel>(const BandViews&, bool lean)>;
// The scratchpad bytes a band's kernel would need (oneDNN's choice, staged copies included).
using BandCost = std::function<uint64_t(const BandViews&)>;

// The banded variants of a convolution whose kernel needs `have` scratchpad bytes: bands with
// half its staged bytes, a quarter, under kBandFloor bytes, then a row per band on the leanest
// kernels, each kept only if leaner than the one before (kernel selection takes the first that
// lowers the arena in time: the fewest primitive calls that do). Made for T OpenMP threads (the
// caller's count), all but the last run in T lanes (BandedKernel), with T times the bands, each
// 1/T as tall: as much scratchpad as two or four bands one after another, in less time; one
// after another where the lanes' bands are not leaner than the variant before (an output of
// few rows). None where `have` is under the floor, the output has one row, or none of the bands
// but a row each is leaner.
std::vector<std::unique_ptr<BandedKernel>> row_band_variants(const RowBanding& r, uint64_t have, const BandCost& cost,
                                                             const MakeBandKernel& make);

// dnnl_conv.cpp: the float Conv `node` on one band of rows whose views are the band's own
// buffers (a patch chain's tile buffers, runtime/kernels/dnnl/patch_chain.h), as oneDNN chooses
// it; null for a pre-activated Conv, a Conv not 2-D, or only a slow kernel. A fused Add's addend
// is read with the output's view.
std::unique_ptr<Kernel> make_conv_rows(const Node& node, const KernelEnv& env, const BandViews& views);

}  // namespace memplan::rt::dnnl_kernels
