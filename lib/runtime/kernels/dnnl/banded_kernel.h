// A kernel run in bands, each band a kernel of its own on views into the same tensors: bands of
// output rows (row_bands.h cuts them, for float and int8 convolutions), or chunks of channels
// (dnnl_conv.cpp's convolutions, dnnl_pool_norm.cpp's staged pools). Its staged copies (and a
// GEMM's im2col buffer) hold one band, not the whole tensor. These are the leaner variants of a
// kernel whose temporaries set the arena's peak
// (pipeline/lean_kernels): the scratchpad shrinks with the band, the time grows with the number
// of primitive calls.
//
// Bands of rows may run in lanes: each of the session's threads (up to `lanes`) runs every
// lanes-th band by itself, on its own slice of the scratchpad. A band's copies in and out then
// stay in one core's cache and its primitives need no barrier between threads: on 2 threads
// (AVX2), eight bands of seg_fcn_256_dyn's decoder ConvInteger in two lanes take 1.04-1.09x the
// whole kernel's time in the model, where four bands one after the other, with as much
// scratchpad, took 1.19-1.23x.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <dnnl.hpp>

#include "runtime/kernel.h"

namespace memplan::rt::dnnl_kernels {

class BandedKernel final : public Kernel {
 public:
  // A part runs every band of one geometry (a band at the top edge has other pads than one in
  // the middle). It takes input 0 as a view of `in_span` bytes and output 0 (and a fused addend,
  // input `addend`) as one of `out_span` bytes, starting where a band says: the sizes oneDNN
  // gives its strided descriptors, which count whole channels. It touches only the first
  // `in_reach` and `out_reach` bytes of them (the band's last row of the last channel ends there).
  struct Part {
    std::unique_ptr<Kernel> kernel;
    uint64_t in_span = 0, out_span = 0;
    uint64_t in_reach = 0, out_reach = 0;
  };
  struct Band {
    size_t part = 0;
    uint64_t in_offset = 0, out_offset = 0;  // bytes into input 0, and into output 0 (and the addend)
  };

  // What a band is: output rows (of every channel), or channels (input channels whose partial
  // sums the bands add into the whole output, or whole groups of a grouped convolution).
  enum class Cut : uint8_t { Rows, Channels };

  // `in_bytes`, `out_bytes`: the whole input 0 and output 0; every band must lie inside them.
  // `addend`: the input a fused Add reads with output 0's geometry, or -1.
  // `lanes` > 1 (bands of rows only, which write apart and read only the addend's rows they
  // write): up to that many bands at once, each lane with a stream of its own on `engine`.
  BandedKernel(Cut cut, std::vector<Part> parts, std::vector<Band> bands, uint64_t in_bytes, uint64_t out_bytes,
               int addend, const std::string& where, size_t lanes = 1, dnnl::engine engine = {});

  void run(const KernelArgs& args) override;
  std::unique_ptr<KernelState> make_state() const override;
  uint64_t scratchpad_bytes() const override;
  bool reads_at_run_time(size_t input) const override;
  // A band reads its part of the addend into its output before it writes any of it, and no later
  // band reads that part (chunks of input channels: the first reads the whole addend): the output
  // may be written over the addend.
  bool may_overwrite_input(size_t input) const override { return addend_ >= 0 && input == static_cast<size_t>(addend_); }
  // "N bands of rows: " (or channels) and the first part's implementation.
  std::string implementation() const override;
  size_t band_count() const { return bands_.size(); }
  size_t lanes() const { return lanes_; }
  Cut cut() const { return cut_; }

 private:
  struct State;
  // Runs band `i` on `lane`'s kernel states and slice of the scratchpad.
  void run_band(size_t i, size_t lane, State& s, const KernelArgs& args, dnnl_stream* stream) const;
  Cut cut_;
  std::vector<Part> parts_;
  std::vector<Band> bands_;
  uint64_t in_bytes_, out_bytes_;
  int addend_;
  std::string where_;
  size_t lanes_;
  uint64_t lane_bytes_ = 0;  // one lane's slice of the scratchpad: the largest part's, 64-byte aligned
  dnnl::engine engine_;
};

}  // namespace memplan::rt::dnnl_kernels
