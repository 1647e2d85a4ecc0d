// A convolution in bands of output rows or in chunks of channels
// (runtime/kernels/dnnl/banded_kernel.h): the leaner variants a float Conv offers after its whole
// kernel (bands of rows: 2-D, plain tensors; chunks of channels: batch 1, constant weights, any
// layout). Each variant of the take_leaner() chain runs on the same data and must give the whole
// kernel's numbers while it needs less scratchpad than the one before of its kind; it touches no
// byte past its tensors or its scratchpad. Then whole models compiled with `prefer memory` take such kernels: the example model
// still gives its expected outputs, and a fused Conv+Add written over its addend the numbers of the
// fastest kernels.
#include <catch2/catch.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "memplan/memplan.h"
#include "runtime/compiled_model_impl.h"
#include "runtime/dnnl_context.h"
#include "runtime/kernels/dnnl/banded_kernel.h"
#include "runtime/run_threads.h"
#include "support/kernel_harness.h"
#include "support/naive_conv.h"
#include "support/model_builder.h"
#include "support/temp_dir.h"
#include "support/test_data_set.h"

namespace {

using namespace memplan::test::kernel_names;
using memplan::rt::Kernel;
using memplan::rt::KernelArgs;
using memplan::rt::TensorView;
using memplan::rt::dnnl_kernels::BandedKernel;

constexpr uint64_t kBandFloor = 64 * 1024;  // row_bands.h's: the thin bands' budget
constexpr size_t kCanary = 256;             // bytes checked after every buffer a kernel is given

size_t count(const Dims& d) {
  size_t n = 1;
  for (int64_t x : d) n *= static_cast<size_t>(x);
  return n;
}

// A 2-D Conv: x [N, C, H, W], w [M, C/group, KH, KW]; pads top, left, bottom, right.
struct ConvSpec {
  Dims xd, wd;
  int64_t group = 1;
  Dims strides{1, 1}, dilations{1, 1}, pads{0, 0, 0, 0};
  std::string auto_pad;  // when set, the attribute instead of `pads` (which then say what it resolves to)
  bool bias = true;
  bool runtime_weights = false;  // W a run-time input, not a constant
  bool add = false;   // a fused Add: input 3, the oneDNN sum post-op
  bool relu = false;  // memplan_fused_activation 1
  bool clip = false;  // memplan_fused_activation 2, to [kClipLo, kClipHi]

  int64_t out(size_t axis) const {
    const int64_t k = (wd[2 + axis] - 1) * dilations[axis] + 1;
    return (xd[2 + axis] + pads[axis] + pads[axis + 2] - k) / strides[axis] + 1;
  }
  Dims yd() const { return {xd[0], wd[0], out(0), out(1)}; }
  // Products summed into one output element.
  int64_t taps() const { return wd[1] * wd[2] * wd[3]; }
};

constexpr float kClipLo = -0.25f, kClipHi = 0.5f;

// The naive convolution, then the fused Add and Relu (or Clip).
Floats naive(const ConvSpec& s, const Floats& x, const Floats& w, const Floats& b, const Floats& addend) {
  Floats y = memplan::test::naive_conv2d(x, s.xd, w, s.wd, b, {s.group, s.strides, s.dilations, s.pads}, s.out(0), s.out(1));
  for (size_t i = 0; i < y.size(); ++i) {
    double acc = static_cast<double>(y[i]) + (addend.empty() ? 0.0 : addend[i]);
    if (s.relu) acc = std::max(acc, 0.0);
    if (s.clip) acc = std::clamp(acc, static_cast<double>(kClipLo), static_cast<double>(kClipHi));
    y[i] = static_cast<float>(acc);
  }
  return y;
}

// 64-byte aligned bytes, `size` of them for the kernel and kCanary after them set to `fill`: a
// kernel that writes past its share changes the canary; one that reads past it reads NaNs.
class Guarded {
 public:
  Guarded(uint64_t size, std::byte fill) : size_(size), raw_(static_cast<size_t>(size) + kCanary + 64, fill) {
    const auto addr = reinterpret_cast<uintptr_t>(raw_.data());
    data_ = raw_.data() + ((64 - addr % 64) % 64);
  }
  std::byte* data() { return data_; }
  uint64_t size() const { return size_; }
  bool canary_intact(std::byte fill) const {
    return std::all_of(data_ + size_, data_ + size_ + kCanary, [&](std::byte b) { return b == fill; });
  }

 private:
  uint64_t size_;
  std::vector<std::byte> raw_;
  std::byte* data_ = nullptr;
};

constexpr std::byte kNaN{0xFF};  // 0xFFFFFFFF is a NaN float

TensorView view_of(std::byte* data, const Dims& d) {
  TensorView v;
  v.data = data;
  v.dtype = F32;
  v.rank = static_cast<int>(d.size());
  for (size_t i = 0; i < d.size(); ++i) v.dims[i] = d[i];
  v.capacity = count(d) * sizeof(float);
  return v;
}

// An [N, C, H, W] tensor's values in channel blocks of `block` ([N, C/block, H, W, block]), and
// back.
Floats to_blocked(const Floats& plain, const Dims& d, int64_t block, bool back = false) {
  const int64_t c = d[1], hw = d[2] * d[3];
  Floats out(plain.size());
  for (int64_t n = 0; n < d[0]; ++n)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < hw; ++p) {
        const auto flat = static_cast<size_t>((n * c + ch) * hw + p);
        const auto blocked = static_cast<size_t>(((n * (c / block) + ch / block) * hw + p) * block + ch % block);
        if (back) out[flat] = plain[blocked];
        else out[blocked] = plain[flat];
      }
  return out;
}

// A Conv kernel made through the registry (KernelCase), its data, and its take_leaner() chain.
class ConvUnderTest {
 public:
  explicit ConvUnderTest(const ConvSpec& s, uint32_t seed = 1) : s_(s), c_("Conv") {
    x_ = random_floats(count(s.xd), seed);
    w_ = random_floats(count(s.wd), seed + 1);
    if (s.bias) b_ = random_floats(static_cast<size_t>(s.wd[0]), seed + 2);
    if (s.add) addend_ = random_floats(count(s.yd()), seed + 3);
    c_.input("X", F32, s.xd, x_);
    c_.input("W", F32, s.wd, w_, !s.runtime_weights);
    if (s.bias) c_.input("B", F32, {s.wd[0]}, b_, !s.runtime_weights);
    else if (s.add) c_.omitted_input();
    if (s.add) c_.input("Residual", F32, s.yd(), addend_);
    y_ = c_.output("Y", F32, s.yd());
    c_.attr("group", s.group);
    c_.attr("strides", s.strides);
    c_.attr("dilations", s.dilations);
    if (s.auto_pad.empty()) c_.attr("pads", s.pads);
    else c_.attr("auto_pad", s.auto_pad);
    if (s.relu) c_.attr("memplan_fused_activation", int64_t{1});
    if (s.clip) {
      c_.attr("memplan_fused_activation", int64_t{2});
      c_.attr("memplan_fused_clip", std::vector<float>{kClipLo, kClipHi});
    }
  }

  KernelCase& kernel_case() { return c_; }
  // The activations (input, output and the fused Add's input) in channel blocks of `block`;
  // run() takes and gives plain values still.
  void block_channels(int block) {
    block_ = block;
    for (Value* v : c_.node().inputs)
      if (v && !v->is_constant()) v->channel_block = block;
    y_->channel_block = block;
  }
  Value& output_value() { return *y_; }
  const ConvSpec& spec() const { return s_; }
  Floats want() const { return naive(s_, x_, w_, b_, addend_); }

  // Makes the whole kernel (and runs it once through the harness), then takes its variants.
  // In between, the constants lose their bytes, as kernel selection releases them once their
  // readers' kernels are made: the variants, made when taken, work from the whole kernel's copies.
  void make() {
    REQUIRE(c_.run());
    whole_ = c_.kernel();
    for (Value* v : c_.node().inputs)
      if (v && v->is_constant()) v->release_constant_bytes();
    Kernel* k = whole_;
    while (std::unique_ptr<Kernel> lean = k->take_leaner()) {
      chain_.push_back(std::move(lean));
      k = chain_.back().get();
    }
  }
  Kernel& whole() { return *whole_; }
  // The variants, leanest last.
  const std::vector<std::unique_ptr<Kernel>>& chain() const { return chain_; }
  // The variants in bands of rows, and those in chunks of channels.
  std::vector<BandedKernel*> banded() const { return cut_into(BandedKernel::Cut::Rows); }
  std::vector<BandedKernel*> chunked() const { return cut_into(BandedKernel::Cut::Channels); }
  std::vector<BandedKernel*> cut_into(BandedKernel::Cut cut) const {
    std::vector<BandedKernel*> out;
    for (const auto& k : chain_)
      if (auto* b = dynamic_cast<BandedKernel*>(k.get()); b && b->cut() == cut) out.push_back(b);
    return out;
  }

  // Runs `k` on fresh buffers with NaN canaries (the output starts as NaNs too); `in_place`:
  // the output is written over the fused Add's input, as the planner may arrange.
  Floats run(Kernel& k, bool in_place = false) {
    const Dims yd = s_.yd();
    const uint64_t ybytes = count(yd) * sizeof(float);
    Guarded x(x_.size() * sizeof(float), kNaN), w(w_.size() * sizeof(float), kNaN),
        b(std::max<size_t>(b_.size(), 1) * sizeof(float), kNaN), add(ybytes, kNaN), y(ybytes, kNaN),
        pad(k.scratchpad_bytes(), kNaN);
    const Floats xs = block_ ? to_blocked(x_, s_.xd, block_) : x_;
    const Floats adds = block_ && s_.add ? to_blocked(addend_, yd, block_) : addend_;
    std::memcpy(x.data(), xs.data(), x.size());
    std::memcpy(w.data(), w_.data(), w.size());
    if (!b_.empty()) std::memcpy(b.data(), b_.data(), b.size());
    if (s_.add) std::memcpy(add.data(), adds.data(), add.size());
    std::vector<TensorView> in{view_of(x.data(), s_.xd), view_of(w.data(), s_.wd)};
    if (s_.bias || s_.add) in.push_back(s_.bias ? view_of(b.data(), {s_.wd[0]}) : TensorView{});
    std::byte* out_data = y.data();
    if (s_.add) {
      in.push_back(view_of(add.data(), yd));
      if (in_place) out_data = add.data();
    }
    std::vector<TensorView> out{view_of(out_data, yd)};
    const std::unique_ptr<memplan::rt::KernelState> state = k.make_state();
    k.run(KernelArgs{in, out, pad.data(), state.get()});
    for (Guarded* g : {&x, &w, &b, &add, &y, &pad}) CHECK(g->canary_intact(kNaN));
    Floats got(count(yd));
    std::memcpy(got.data(), out_data, ybytes);
    return block_ ? to_blocked(got, yd, block_, true) : got;
  }

 private:
  ConvSpec s_;
  KernelCase c_;
  Value* y_ = nullptr;
  Floats x_, w_, b_, addend_;
  Kernel* whole_ = nullptr;
  std::vector<std::unique_ptr<Kernel>> chain_;
  int block_ = 0;
};

// Every element of `got` within `tol` of `want`: one assertion for the whole tensor, naming the
// first element that is not and how many are not.
void require_close(const Floats& got, const Floats& want, const Tolerance& tol = abs_rel(1e-4, 1e-3)) {
  REQUIRE(got.size() == want.size());
  size_t bad = 0, first = got.size();
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(static_cast<double>(got[i]) - want[i]) <= tol.bound(want[i])) && bad++ == 0) first = i;
  INFO(bad << " of " << got.size() << " elements differ; the first, " << first << ": got "
           << (bad ? got[first] : 0.f) << ", want " << (bad ? want[first] : 0.f));
  REQUIRE(bad == 0);
}

// Different oneDNN implementations sum an output's products in different orders: a variant
// agrees with the whole kernel within 2e-7 per product (the inputs are in [-1, 1)) and 1e-5 of
// the value; a band that read or wrote the wrong rows would be off by about 1.
Tolerance same_sums(const ConvSpec& s) { return abs_rel(2e-7 * static_cast<double>(s.taps()), 1e-5); }

// Checks every variant of the chain: each leaner than the one before of its kind (the bands of
// rows after the whole kernels, the chunks of channels after the bands, each leaner than the
// whole kernel), the bands (or chunks) of each variant more than the last's (bands of a row each
// come again on the leanest kernels), and every variant's
// numbers the whole kernel's (with a fused Add, also with the output written over the addend,
// which both allow). Returns the whole kernel's output.
Floats check_variants(ConvUnderTest& t) {
  t.make();
  const Floats whole = t.run(t.whole());
  require_close(whole, t.want());
  INFO("whole kernel scratchpad " << t.whole().scratchpad_bytes() << " bytes, " << t.chain().size() << " variants");
  uint64_t before = t.whole().scratchpad_bytes(), chunks_before = t.whole().scratchpad_bytes();
  size_t bands_before = 1, count_before = 1;
  bool chunks_seen = false;
  const auto rows = static_cast<size_t>(t.spec().out(0));
  for (size_t i = 0; i < t.chain().size(); ++i) {
    Kernel& k = *t.chain()[i];
    auto* b = dynamic_cast<BandedKernel*>(&k);
    const bool chunks = b && b->cut() == BandedKernel::Cut::Channels;
    INFO("variant " << i << (b ? std::string(chunks ? " (" : " (banded, ") + std::to_string(b->band_count()) +
                                     (chunks ? " chunks)" : " bands in " + std::to_string(b->lanes()) + " lanes)")
                               : std::string(" (whole)"))
                    << ": " << k.scratchpad_bytes() << " scratchpad bytes");
    if (chunks) {
      CHECK(k.scratchpad_bytes() < chunks_before);
      chunks_before = k.scratchpad_bytes();
      CHECK(b->band_count() > count_before);
      count_before = b->band_count();
      chunks_seen = true;
    } else {
      CHECK_FALSE(chunks_seen);  // the chunks come last
      CHECK(k.scratchpad_bytes() < before);
      before = k.scratchpad_bytes();
    }
    if (b) {
      if (!chunks) {
        // Thinner bands in each lane (bands in lanes run lanes-many at once).
        const size_t per_lane = (b->band_count() + b->lanes() - 1) / b->lanes();
        CHECK((per_lane > bands_before || b->band_count() == rows));
        CHECK(b->band_count() <= rows);
        bands_before = per_lane;
      }
      CHECK_FALSE(b->may_overwrite_input(0));
      CHECK(b->may_overwrite_input(3) == t.spec().add);
      if (t.spec().add) require_close(t.run(k, true), whole, same_sums(t.spec()));
    }
    require_close(t.run(k), whole, same_sums(t.spec()));
  }
  return whole;
}

// The checks above, and at least one banded variant, the thinnest within its budget (or one row
// each). `edge_kernels`: oneDNN may take a hungrier kernel for a band with padding rows (AVX2's,
// for pads as tall as the kernel), and none at all for thinner bands; the thinnest then needs at
// most a quarter of the whole kernel's scratchpad.
void check_chain(ConvUnderTest& t, bool edge_kernels = false) {
  check_variants(t);
  const std::vector<BandedKernel*> banded = t.banded();
  REQUIRE(!banded.empty());
  BandedKernel& thinnest = *banded.back();
  INFO("the thinnest bands: " << thinnest.band_count() << ", " << thinnest.scratchpad_bytes() << " scratchpad bytes");
  const uint64_t budget = edge_kernels ? std::max(kBandFloor, t.whole().scratchpad_bytes() / 4) : kBandFloor;
  CHECK((thinnest.scratchpad_bytes() <= budget || thinnest.band_count() == static_cast<size_t>(t.spec().out(0))));
}

// The checks above, and at least one variant in chunks of channels; the last a chunk of the
// fewest channels the layouts allow, or under the bands' budget.
void check_chunks(ConvUnderTest& t, int64_t fewest) {
  check_variants(t);
  const std::vector<BandedKernel*> chunked = t.chunked();
  REQUIRE(!chunked.empty());
  const BandedKernel& last = *chunked.back();
  const int64_t units = t.spec().group > 1 ? t.spec().group : t.spec().xd[1];
  INFO(last.band_count() << " chunks, " << last.scratchpad_bytes() << " scratchpad bytes");
  CHECK((static_cast<int64_t>(last.band_count()) >= units / fewest || last.scratchpad_bytes() <= kBandFloor));
}

}  // namespace

TEST_CASE("a 3x3 convolution in bands gives the whole convolution's numbers with less scratchpad", "[kernels][dnnl][bands]") {
  ConvSpec s;
  s.xd = {1, 16, 56, 56};
  s.wd = {32, 16, 3, 3};
  s.pads = {1, 1, 1, 1};
  ConvUnderTest t(s);
  check_chain(t);
}

TEST_CASE("a strided convolution with asymmetric pads in bands gives the whole convolution's numbers",
          "[kernels][dnnl][bands]") {
  ConvSpec s;
  s.xd = {1, 16, 57, 57};
  s.wd = {32, 16, 3, 3};
  s.strides = {2, 2};
  s.pads = {1, 0, 2, 1};
  ConvUnderTest t(s, 11);
  REQUIRE(s.yd() == Dims{1, 32, 29, 28});
  check_chain(t);
}

TEST_CASE("a dilated convolution in bands gives the whole convolution's numbers", "[kernels][dnnl][bands]") {
  ConvSpec s;
  s.xd = {1, 16, 48, 48};
  s.wd = {32, 16, 3, 3};
  s.dilations = {2, 2};
  s.pads = {2, 2, 2, 2};
  ConvUnderTest t(s, 21);
  check_chain(t);
}

TEST_CASE("a 5x5 convolution in bands gives the whole convolution's numbers", "[kernels][dnnl][bands]") {
  ConvSpec s;
  s.xd = {1, 16, 48, 48};
  s.wd = {32, 16, 5, 5};
  s.pads = {2, 2, 2, 2};
  ConvUnderTest t(s, 31);
  check_chain(t);
}

TEST_CASE("a convolution whose output rows the bands do not divide evenly gives the whole convolution's numbers",
          "[kernels][dnnl][bands]") {
  ConvSpec s;
  s.xd = {1, 16, 37, 60};
  s.wd = {32, 16, 3, 3};
  s.pads = {1, 1, 1, 1};
  ConvUnderTest t(s, 41);
  REQUIRE(s.out(0) == 37);
  check_chain(t);
  // 37 is prime: bands of more than one row leave a shorter last band.
  const std::vector<BandedKernel*> b = t.banded();
  CHECK(std::any_of(b.begin(), b.end(), [](const BandedKernel* k) { return k->band_count() > 1 && k->band_count() < 37; }));
}

TEST_CASE("a convolution of a batch of two in bands gives the whole convolution's numbers", "[kernels][dnnl][bands]") {
  ConvSpec s;
  s.xd = {2, 16, 40, 40};
  s.wd = {32, 16, 3, 3};
  s.pads = {1, 1, 1, 1};
  ConvUnderTest t(s, 51);
  check_chain(t);
}

TEST_CASE("a depthwise convolution of 58 channels in bands gives the whole convolution's numbers",
          "[kernels][dnnl][bands]") {
  ConvSpec s;
  s.xd = {1, 58, 48, 48};
  s.wd = {58, 1, 3, 3};
  s.group = 58;
  s.pads = {1, 1, 1, 1};
  ConvUnderTest t(s, 61);
  check_chain(t);
}

TEST_CASE("a convolution with a fused Add and Relu in bands gives the whole convolution's numbers, in place too",
          "[kernels][dnnl][bands]") {
  ConvSpec s;
  s.xd = {1, 16, 48, 48};
  s.wd = {32, 16, 3, 3};
  s.pads = {1, 1, 1, 1};
  s.add = true;
  s.relu = true;
  ConvUnderTest t(s, 71);
  check_chain(t);  // in place too: a band reads its rows of the addend before it writes them
}

TEST_CASE("bands of rows made for two threads run in two lanes, a band per thread at a time, and give the whole "
          "convolution's numbers on one thread or two, in place too", "[kernels][dnnl][bands]") {
  // seg_fcn's decoder Conv at a quarter of its size, with a fused Add and Relu: each lane runs
  // its bands on a slice of the scratchpad of its own, and a band reads only the addend's rows it
  // writes, so the output may be written over the addend with two bands at once.
  const memplan::ThreadScope two(2);
  ConvSpec s;
  s.xd = {1, 32, 64, 64};
  s.wd = {16, 32, 3, 3};
  s.pads = {1, 1, 1, 1};
  s.add = true;
  s.relu = true;
  ConvUnderTest t(s, 131);
  const Floats whole = check_variants(t);
  std::vector<BandedKernel*> in_lanes;
  for (BandedKernel* b : t.banded())
    if (b->lanes() == 2) in_lanes.push_back(b);
  REQUIRE(!in_lanes.empty());
  // Half the whole kernel's staged rows at once: four bands of 16 rows, two at a time.
  CHECK(in_lanes.front()->band_count() == 4);
  // A session on one thread (as while other processes hold the cores) runs them one after another.
  for (const int threads : {1, 2}) {
    const memplan::ThreadScope scope(threads);
    INFO(threads << " thread(s)");
    for (BandedKernel* b : in_lanes) {
      INFO(b->band_count() << " bands");
      require_close(t.run(*b), whole, same_sums(s));
      require_close(t.run(*b, true), whole, same_sums(s));
    }
  }
}

TEST_CASE("a convolution with a fused Relu in bands gives the whole convolution's numbers", "[kernels][dnnl][bands]") {
  ConvSpec s;
  s.xd = {1, 16, 48, 48};
  s.wd = {32, 16, 3, 3};
  s.pads = {1, 1, 1, 1};
  s.relu = true;
  ConvUnderTest t(s, 81);
  check_chain(t);
}

// The 3x3 convolution the geometry cases below change one thing of.
ConvSpec base_spec() {
  ConvSpec s;
  s.xd = {1, 16, 56, 56};
  s.wd = {32, 16, 3, 3};
  s.pads = {1, 1, 1, 1};
  return s;
}

TEST_CASE("convolutions with other kernels and strides in bands give the whole convolution's numbers",
          "[kernels][dnnl][bands]") {
  ConvSpec s = base_spec();
  SECTION("a 1x1 kernel with stride 2: the bands skip input rows between them") {
    s.xd = {1, 32, 56, 56};
    s.wd = {32, 32, 1, 1};
    s.strides = {2, 2};
    s.pads = {0, 0, 0, 0};
  }
  SECTION("a 2x2 kernel with stride 3") {
    s.wd = {32, 16, 2, 2};
    s.strides = {3, 3};
    s.pads = {0, 0, 0, 0};
  }
  SECTION("a 3x1 kernel") {
    s.wd = {32, 16, 3, 1};
    s.pads = {1, 0, 1, 0};
  }
  SECTION("a 7x7 kernel dilated 2 down and 1 across, stride 2, uneven pads") {
    s.xd = {1, 16, 60, 60};
    s.wd = {24, 16, 7, 7};
    s.strides = {2, 2};
    s.dilations = {2, 1};
    s.pads = {5, 3, 6, 3};
  }
  SECTION("auto_pad SAME_UPPER with stride 2: one row of padding, at the bottom") {
    s.strides = {2, 2};
    s.auto_pad = "SAME_UPPER";
    s.pads = {0, 0, 1, 1};
  }
  ConvUnderTest t(s, 91);
  check_chain(t);
}

TEST_CASE("convolutions with much padding or few rows in bands give the whole convolution's numbers",
          "[kernels][dnnl][bands]") {
  ConvSpec s = base_spec();
  bool edge_kernels = false;
  SECTION("pads as tall as the kernel: the first band's first rows are all padding") {
    s.pads = {3, 1, 3, 1};
    edge_kernels = true;
  }
  SECTION("an input of two rows under a 5-row kernel: each band's rows are mostly padding") {
    s.xd = {1, 64, 2, 400};
    s.wd = {64, 64, 5, 5};
    s.pads = {2, 2, 2, 2};
  }
  SECTION("two output rows of many channels: a row per band") {
    s.xd = {1, 128, 4, 100};
    s.wd = {128, 128, 3, 3};
    s.pads = {0, 1, 0, 1};
  }
  SECTION("a column one pixel wide") {
    s.xd = {1, 64, 500, 1};
    s.wd = {64, 64, 3, 1};
    s.pads = {1, 0, 1, 0};
  }
  ConvUnderTest t(s, 101);
  check_chain(t, edge_kernels);
}

TEST_CASE("convolutions with other channel counts in bands give the whole convolution's numbers",
          "[kernels][dnnl][bands]") {
  ConvSpec s = base_spec();
  SECTION("a 3-channel image with stride 2 (a network's stem)") {
    s.xd = {1, 3, 224, 224};
    s.wd = {16, 3, 3, 3};
    s.strides = {2, 2};
  }
  SECTION("one input channel") {
    s.xd = {1, 1, 256, 256};
    s.wd = {8, 1, 3, 3};
  }
  SECTION("two groups") {
    s.xd = {1, 32, 48, 48};
    s.wd = {64, 16, 3, 3};
    s.group = 2;
  }
  ConvUnderTest t(s, 111);
  check_chain(t);
}

TEST_CASE("a convolution of a few channels, a row per band, takes oneDNN's leanest kernel: nothing beyond the staged rows",
          "[kernels][dnnl][bands]") {
  // The design example's Conv in its If branch. On AVX-512 oneDNN's default kernel for a band
  // (brgconv) keeps 12 KB of scratchpad of its own; its direct kernel on channels-last copies of
  // the band's rows keeps none, and so does AVX2's.
  ConvSpec s;
  s.xd = {1, 8, 112, 112};
  s.wd = {8, 8, 3, 3};
  s.pads = {1, 1, 1, 1};
  ConvUnderTest t(s);
  check_chain(t);
  const BandedKernel& thinnest = *t.banded().back();
  REQUIRE(thinnest.band_count() == 112);
  const uint64_t row = 8 * 112 * sizeof(float);
  CHECK(thinnest.scratchpad_bytes() <= 3 * row + row);  // three input rows and one output row
}

TEST_CASE("convolutions with run-time weights or a fused Add without bias in bands give the whole convolution's numbers",
          "[kernels][dnnl][bands]") {
  ConvSpec s = base_spec();
  SECTION("weights and bias given at run time") {
    s.runtime_weights = true;
  }
  SECTION("a fused Add and no bias") {
    s.bias = false;
    s.add = true;
  }
  SECTION("a batch of two with a fused Add, written in place") {
    s.xd = {2, 16, 30, 30};
    s.add = true;
  }
  ConvUnderTest t(s, 111);
  check_chain(t);
}

TEST_CASE("a convolution with a channel-blocked input or output is not cut into bands", "[kernels][dnnl][bands]") {
  const int block = memplan::rt::dnnl_channel_block();
  REQUIRE(block > 0);  // 16 on AVX-512, 8 on AVX2
  ConvSpec s;
  s.xd = {1, 16, 56, 56};
  s.wd = {32, 16, 3, 3};
  s.pads = {1, 1, 1, 1};
  {
    ConvUnderTest plain(s);  // the same convolution on plain tensors is
    plain.make();
    CHECK(!plain.banded().empty());
  }
  SECTION("output blocked") {
    ConvUnderTest t(s);
    t.output_value().channel_block = block;
    t.make();
    CHECK(t.banded().empty());
  }
  SECTION("input blocked") {
    ConvUnderTest t(s);
    t.kernel_case().node().inputs[0]->channel_block = block;
    t.make();
    CHECK(t.banded().empty());
  }
}

TEST_CASE("a strided 1x1 convolution on channel-blocked tensors in chunks of input channels gives the whole "
          "convolution's numbers with less scratchpad", "[kernels][dnnl][chunks]") {
  // ResNet's downsampling shortcut: oneDNN's 1x1 kernel copies the strided input to unit stride
  // in its scratchpad, which a chunk of input channels shrinks.
  const int block = memplan::rt::dnnl_channel_block();
  ConvSpec s;
  s.xd = {1, 64, 56, 56};
  s.wd = {128, 64, 1, 1};
  s.strides = {2, 2};
  SECTION("with bias") {}
  SECTION("with a fused Add and Relu: the first chunk adds the addend, the last applies Relu; in place too") {
    s.add = true;
    s.relu = true;
  }
  SECTION("without bias, with a fused Relu") {
    s.bias = false;
    s.relu = true;
  }
  ConvUnderTest t(s, 131);
  t.block_channels(block);
  check_chunks(t, block);
  CHECK(t.banded().empty());
}

TEST_CASE("a depthwise convolution of 58 plain channels in chunks of groups gives the whole convolution's numbers "
          "with less scratchpad", "[kernels][dnnl][chunks]") {
  // ShuffleNet's: oneDNN runs it on channel-blocked copies of its plain tensors, which a chunk
  // of groups shrinks; the last chunk is shorter.
  ConvSpec s;
  s.xd = {1, 58, 56, 56};
  s.wd = {58, 1, 3, 3};
  s.group = 58;
  s.strides = {2, 2};
  s.pads = {1, 1, 1, 1};
  SECTION("with bias") {}
  SECTION("with a fused Add, in place too") { s.add = true; }
  ConvUnderTest t(s, 141);
  check_chunks(t, 1);
}

TEST_CASE("a convolution of a batch of two, or of run-time weights, is not cut into chunks", "[kernels][dnnl][chunks]") {
  ConvSpec s;
  s.xd = {1, 64, 56, 56};
  s.wd = {128, 64, 1, 1};
  s.strides = {2, 2};
  {
    ConvUnderTest one(s);  // the same convolution of a batch of one, constant weights, is
    one.block_channels(memplan::rt::dnnl_channel_block());
    one.make();
    CHECK(!one.chunked().empty());
  }
  SECTION("a batch of two: a chunk of channels is not contiguous") { s.xd[0] = 2; }
  SECTION("run-time weights") { s.runtime_weights = true; }
  ConvUnderTest t(s);
  t.block_channels(memplan::rt::dnnl_channel_block());
  t.make();
  CHECK(t.chunked().empty());
}

TEST_CASE("a GEMM convolution on plain tensors applies its fused Relu or Clip after the primitive, to the fused "
          "numbers", "[kernels][dnnl][chunks]") {
  // oneDNN's GEMM convolution (a 1x1 Conv of 24 plain channels) applies an eltwise post-op in a
  // slow loop: the whole kernel, and the last chunk of its variants, clamp the output instead.
  ConvSpec s;
  s.xd = {1, 24, 64, 64};
  s.wd = {24, 24, 1, 1};
  SECTION("a fused Add and Relu (the Add stays a sum post-op), in place too") {
    s.add = true;
    s.relu = true;
  }
  SECTION("a fused Clip") { s.clip = true; }
  SECTION("a fused Add and Clip without bias") {
    s.add = true;
    s.clip = true;
    s.bias = false;
  }
  ConvUnderTest t(s, 151);
  const Floats whole = check_variants(t);
  if (s.add) require_close(t.run(t.whole(), true), whole, same_sums(s));
  // Clamped, not merely close: every output within the bounds.
  const float lo = s.clip ? kClipLo : 0.f, hi = s.clip ? kClipHi : std::numeric_limits<float>::infinity();
  CHECK(std::count_if(whole.begin(), whole.end(), [&](float v) { return !(v >= lo && v <= hi); }) == 0);
}

// ---- the example model --------------------------------------------------------------------------

namespace {

namespace fs = std::filesystem;

const fs::path kExample = fs::path(MEMPLAN_SOURCE_DIR) / "models" / "example";

std::vector<memplan::test::DataSet> example_data() {
  std::vector<memplan::test::DataSet> sets;
  for (const char* name : {"test_data_set_0", "test_data_set_1"}) {
    sets.push_back(memplan::test::read_data_set(kExample / name));
    REQUIRE(sets.back().inputs.size() == 3);
    REQUIRE(sets.back().outputs.size() == 1);
  }
  return sets;
}

// Runs every data set in guard mode (`runs` times, from the same arena) against its expected outputs.
void require_expected_outputs(const std::shared_ptr<const memplan::CompiledModel>& model, int runs) {
  memplan::SessionOptions guard;
  guard.check_memory = true;
  memplan::Session session(model, guard);
  for (const memplan::test::DataSet& d : example_data()) {
    for (int run = 0; run < runs; ++run) {
      memplan::test::set_inputs(session, d);
      session.run();
    }
    memplan::test::require_outputs_close(session, d, abs_rel(1e-4, 1e-3));
  }
}

size_t banded_kernels(const memplan::CompiledModel& m) {
  size_t n = 0;
  for (const memplan::NodeExec& ne : m.impl().nodes)
    if (dynamic_cast<const BandedKernel*>(ne.kernel.get())) ++n;
  return n;
}

size_t leaner_steps(const memplan::CompiledModel& m) {
  size_t n = 0;
  for (const memplan::GraphPlan& g : m.impl().plan.graphs) n += g.leaner_kernels.size();
  return n;
}

// A model compiled to prefer speed (`fast`) and to prefer memory (`lean`).
struct SpeedAndMemory {
  std::string path;
  std::shared_ptr<const memplan::CompiledModel> fast, lean;
  explicit SpeedAndMemory(std::string model) : path(std::move(model)) {
    memplan::CompileOptions speed, memory;
    speed.prefer = "speed";
    memory.prefer = "memory";
    fast = memplan::CompiledModel::compile(path, speed);
    lean = memplan::CompiledModel::compile(path, memory);
  }
};

}  // namespace

TEST_CASE("the example model compiled to prefer memory runs its convolutions in bands, in a smaller arena, to its "
          "expected outputs", "[runtime][bands]") {
  const std::string path = (kExample / "model.onnx").string();
  const SpeedAndMemory both(path);
  const auto& fast = both.fast;
  const auto& lean = both.lean;
  INFO("arena " << lean->arena_bytes() << " bytes with prefer memory, " << fast->arena_bytes() << " with prefer speed");
  CHECK(leaner_steps(*fast) == 0);
  CHECK(banded_kernels(*fast) == 0);
  CHECK(leaner_steps(*lean) > 0);
  CHECK(banded_kernels(*lean) > 0);
  CHECK(lean->arena_bytes() < fast->arena_bytes());
  require_expected_outputs(lean, 2);  // a second run must give the same answer from the same arena

  // A plan file keeps the choice: loading takes the same variants and plans the same arena.
  memplan::test::TempDir dir("banded_example");
  lean->save_plan(dir / "lean.mplan");
  const auto loaded = memplan::CompiledModel::load(path, dir / "lean.mplan");
  CHECK(loaded->arena_bytes() == lean->arena_bytes());
  CHECK(banded_kernels(*loaded) == banded_kernels(*lean));
  CHECK(leaner_steps(*loaded) == leaner_steps(*lean));
  require_expected_outputs(loaded, 1);
}

TEST_CASE("a Conv too large to time at compile keeps its fastest kernel by default, and is compiled without "
          "allocating its tensors", "[runtime][bands][isa]") {
  // A depthwise Conv over a 3.7 GB input (sizes come from the model): timing its leaner variants
  // as any other's held a compile for minutes in 9.5 GB of memory. It is not timed: by default it
  // keeps its fastest kernel; preferring memory still takes the leaner one.
  memplan::test::ModelBuilder b;
  using memplan::test::elem::kFloat;
  constexpr int64_t kChannels = 58, kSide = 4000;
  memplan::test::add_input(b.graph(), "x", kFloat, {1, kChannels, kSide, kSide});
  memplan::test::add_initializer(b.graph(), memplan::test::tensor_f32("w", {kChannels, 1, 3, 3}, random_floats(kChannels * 9, 7)));
  auto* conv = memplan::test::add_node(b.graph(), "Conv", {"x", "w"}, {"y"}, "depthwise");
  memplan::test::attr_ints(conv, "pads", {1, 1, 1, 1});
  memplan::test::attr_ints(conv, "strides", {2, 2});
  memplan::test::attr_int(conv, "group", kChannels);
  memplan::test::add_output(b.graph(), "y", kFloat, {1, kChannels, kSide / 2, kSide / 2});
  memplan::test::TempDir dir("untimed_conv");
  const std::string path = dir / "m.onnx";
  std::ofstream(path, std::ios::binary) << b.bytes();

  const auto by_default = memplan::CompiledModel::compile(path, {});
  memplan::CompileOptions memory;
  memory.prefer = "memory";
  const auto lean = memplan::CompiledModel::compile(path, memory);
  CHECK(leaner_steps(*by_default) == 0);
  CHECK(leaner_steps(*lean) > 0);
  CHECK(lean->arena_bytes() < by_default->arena_bytes());
  // The process never held the input's 3.7 GB (under a sanitizer, its own memory comes on top).
  rusage usage{};
  REQUIRE(getrusage(RUSAGE_SELF, &usage) == 0);
  CHECK(usage.ru_maxrss < 1024 * 1024);  // KiB
}

TEST_CASE("a Conv and Add fused and run in bands, written over the Add's other input, gives the numbers of the whole "
          "kernel", "[runtime][bands]") {
  // y = Neg(Conv(x) + Relu(r)): the pipeline fuses the Add into the Conv (input 3, the sum
  // post-op); Relu(r) dies there, so the Conv may write its output over it.
  memplan::test::ModelBuilder b;
  using memplan::test::elem::kFloat;
  memplan::test::add_input(b.graph(), "x", kFloat, {1, 16, 56, 56});
  memplan::test::add_input(b.graph(), "r", kFloat, {1, 32, 56, 56});
  memplan::test::add_initializer(b.graph(), memplan::test::tensor_f32("w", {32, 16, 3, 3}, random_floats(32 * 16 * 9, 5)));
  memplan::test::add_initializer(b.graph(), memplan::test::tensor_f32("b", {32}, random_floats(32, 6)));
  memplan::test::add_node(b.graph(), "Relu", {"r"}, {"relu_r"}, "relu");
  memplan::test::attr_ints(memplan::test::add_node(b.graph(), "Conv", {"x", "w", "b"}, {"c"}, "conv"), "pads", {1, 1, 1, 1});
  memplan::test::add_node(b.graph(), "Add", {"c", "relu_r"}, {"s"}, "add");
  memplan::test::add_node(b.graph(), "Neg", {"s"}, {"y"}, "neg");
  memplan::test::add_output(b.graph(), "y", kFloat, {1, 32, 56, 56});
  memplan::test::TempDir dir("banded_add");
  const std::string path = dir / "m.onnx";
  std::ofstream(path, std::ios::binary) << b.bytes();

  const SpeedAndMemory both(path);
  const auto& fast = both.fast;
  const auto& lean = both.lean;
  REQUIRE(banded_kernels(*lean) == 1);
  CHECK(lean->arena_bytes() < fast->arena_bytes());
  // The fused Conv's output shares the bytes of the addend it reads.
  const memplan::GraphPlan& main = lean->impl().plan.graphs[0];
  const memplan::PlannedBuffer* s_buf = nullptr;
  for (const memplan::PlannedBuffer& pb : main.buffers)
    if (pb.name == "s") s_buf = &pb;
  REQUIRE(s_buf != nullptr);
  CHECK(s_buf->alias == memplan::AliasKind::InPlace);
  REQUIRE(s_buf->group >= 0);
  CHECK(main.buffers[static_cast<size_t>(s_buf->group)].name == "relu_r");

  const Floats x = random_floats(16 * 56 * 56, 7), r = random_floats(32 * 56 * 56, 8);
  auto run = [&](const std::shared_ptr<const memplan::CompiledModel>& m) {
    memplan::SessionOptions guard;
    guard.check_memory = true;
    memplan::Session session(m, guard);
    session.set_input("x", memplan::kFloat32, std::vector<int64_t>{1, 16, 56, 56}, x.data(), x.size() * sizeof(float));
    session.set_input("r", memplan::kFloat32, std::vector<int64_t>{1, 32, 56, 56}, r.data(), r.size() * sizeof(float));
    session.run();
    const memplan::TensorRef y = session.output("y");
    Floats out(r.size());
    REQUIRE(y.bytes == out.size() * sizeof(float));
    std::memcpy(out.data(), y.data, y.bytes);
    return out;
  };
  const Floats want = run(fast);
  require_close(run(lean), want, abs_rel(2e-7 * 16 * 9, 1e-5));
}

namespace {

size_t chunked_kernels(const memplan::CompiledModel& m) {
  size_t n = 0;
  for (const memplan::NodeExec& ne : m.impl().nodes)
    if (auto* b = dynamic_cast<const BandedKernel*>(ne.kernel.get()); b && b->cut() == BandedKernel::Cut::Channels) ++n;
  return n;
}

// Every output of one guard-mode run on the same random inputs, end to end.
Floats run_outputs(const std::shared_ptr<const memplan::CompiledModel>& m) {
  memplan::SessionOptions guard;
  guard.check_memory = true;
  memplan::Session session(m, guard);
  uint32_t seed = 3;
  for (const auto& in : m->inputs()) {
    REQUIRE(in.dtype == memplan::kFloat32);
    const Floats x = random_floats(in.capacity_bytes / sizeof(float), seed++);
    session.set_input(in.name, in.dtype, in.shape, x.data(), x.size() * sizeof(float));
  }
  session.run();
  Floats all;
  for (const auto& out : m->outputs()) {
    const memplan::TensorRef y = session.output(out.name);
    const size_t at = all.size();
    all.resize(at + y.bytes / sizeof(float));
    std::memcpy(all.data() + at, y.data, y.bytes);
  }
  return all;
}

}  // namespace

TEST_CASE("blazeface compiled to prefer memory runs in an arena no larger than its fastest kernels', to the outputs of "
          "its fastest kernels", "[runtime][chunks][isa]") {
  // Its 24-channel tensors are stored channels-last on an AVX-512 CPU (no block of 16 divides
  // them) and 8-blocked below it (ctest runs this again under DNNL_MAX_CPU_ISA=AVX2): its depthwise
  // Convs stage no copies either way, so the fastest kernels' arena is already its smallest (3.1 MB,
  // where plain tensors took 4.2 MB and chunks of channels were needed to bring it down).
  const std::string path = std::string(MEMPLAN_SOURCE_DIR) + "/models/real/blazeface_back_256/model.onnx";
  const SpeedAndMemory both(path);
  const auto& fast = both.fast;
  const auto& lean = both.lean;
  INFO("arena " << lean->arena_bytes() << " bytes with prefer memory, " << fast->arena_bytes() << " with prefer speed");
  CHECK(chunked_kernels(*fast) == 0);
  CHECK(fast->arena_bytes() < 4000000);
  CHECK(lean->arena_bytes() <= fast->arena_bytes());
  const Floats want = run_outputs(fast), got = run_outputs(lean);
  require_close(got, want, abs_rel(1e-4, 1e-3));

  // A plan file keeps the choice: loading makes the same chunks and plans the same arena.
  memplan::test::TempDir dir("chunked_blazeface");
  lean->save_plan(dir / "lean.mplan");
  const auto loaded = memplan::CompiledModel::load(path, dir / "lean.mplan");
  CHECK(loaded->arena_bytes() == lean->arena_bytes());
  CHECK(chunked_kernels(*loaded) == chunked_kernels(*lean));
  CHECK(run_outputs(loaded) == got);
}

TEST_CASE("an int8 model compiled to prefer memory runs its ConvIntegers in bands, down to its lower bound, to the "
          "outputs of its fastest kernels", "[runtime][bands][quantized]") {
  // mobilenet_v2 as quantize_dynamic writes it: its peak is two 4.8 MB float tensors of the first
  // block, live whatever the kernels; oneDNN's int8 convolutions stage channels-last (below VNNI,
  // float32) copies of their plain activations, up to 6 MB, which by default the placement could
  // not pack beside them (below VNNI, off the peak: ctest runs this again under
  // DNNL_MAX_CPU_ISA=AVX2). In bands of rows they fit.
  const SpeedAndMemory both(std::string(MEMPLAN_SOURCE_DIR) + "/models/quant/mobilenet_v2_dyn/model.onnx");
  const auto& fast = both.fast;
  const auto& lean = both.lean;
  INFO("arena " << lean->arena_bytes() << " bytes with prefer memory, " << fast->arena_bytes() << " with prefer speed");
  CHECK(banded_kernels(*fast) == 0);
  CHECK(banded_kernels(*lean) > 0);
  CHECK(lean->arena_bytes() < fast->arena_bytes());
  // At its no-alias lower bound, or below it where a Relu or Clip writes over its input.
  CHECK(lean->arena_bytes() <= lean->impl().plan.graphs[0].lower_bound_bytes);
  const Floats got = run_outputs(lean);
  require_close(got, run_outputs(fast), abs_rel(1e-4, 1e-3));

  // A plan file keeps the choice: loading makes the same int8 bands and plans the same arena.
  memplan::test::TempDir dir("banded_int8");
  lean->save_plan(dir / "lean.mplan");
  const auto loaded = memplan::CompiledModel::load(both.path, dir / "lean.mplan");
  CHECK(loaded->arena_bytes() == lean->arena_bytes());
  CHECK(banded_kernels(*loaded) == banded_kernels(*lean));
  CHECK(run_outputs(loaded) == got);
}
