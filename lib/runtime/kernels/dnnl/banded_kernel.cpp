#include "runtime/kernels/dnnl/banded_kernel.h"

#include <omp.h>

#include <algorithm>
#include <array>
#include <exception>

#include "memplan/error.h"

namespace memplan::rt::dnnl_kernels {

namespace {

// Inputs a banded op may take (QLinearConv: 9).
constexpr size_t kMaxInputs = 16;

// `span` bytes of `t` from `offset`, as a vector of t's type: what a part's strided memory
// descriptor is sized at (its own check compares byte sizes). Only the part's reach of it is
// read or written, which the constructor checked lies inside the tensor.
TensorView band_view(const TensorView& t, uint64_t offset, uint64_t span) {
  TensorView v;
  v.data = t.data + offset;
  v.dtype = t.dtype;
  v.rank = 1;
  v.dims[0] = static_cast<int64_t>(span / std::max<uint32_t>(dtype_size(t.dtype), 1));
  v.capacity = span;
  return v;
}

}  // namespace

struct BandedKernel::State final : KernelState {
  struct Lane {
    std::vector<std::unique_ptr<KernelState>> parts;
    dnnl::stream stream;  // lanes after the first (the first runs on the caller's)
  };
  std::vector<Lane> lanes;
};

BandedKernel::BandedKernel(Cut cut, std::vector<Part> parts, std::vector<Band> bands, uint64_t in_bytes,
                           uint64_t out_bytes, int addend, const std::string& where, size_t lanes, dnnl::engine engine)
    : cut_(cut), parts_(std::move(parts)), bands_(std::move(bands)), in_bytes_(in_bytes), out_bytes_(out_bytes), addend_(addend),
      where_(where), lanes_(std::max<size_t>(lanes, 1)), engine_(std::move(engine)) {
  // Chunks of input channels add into one output: they must run one after the other.
  if (lanes_ > 1 && (cut_ != Cut::Rows || !engine_)) fail_internal(where_ + ": only bands of rows run in lanes, on an engine");
  for (const Part& p : parts_) lane_bytes_ = std::max(lane_bytes_, (p.kernel->scratchpad_bytes() + 63) / 64 * 64);
  for (const Band& b : bands_) {
    if (b.part >= parts_.size()) fail_internal(where_ + ": a band names no part");
    const Part& p = parts_[b.part];
    if (p.in_reach > p.in_span || p.out_reach > p.out_span || b.in_offset > in_bytes_ || p.in_reach > in_bytes_ - b.in_offset ||
        b.out_offset > out_bytes_ || p.out_reach > out_bytes_ - b.out_offset)
      fail_internal(where_ + ": a band lies outside its tensors");
  }
}

std::unique_ptr<KernelState> BandedKernel::make_state() const {
  auto s = std::make_unique<State>();
  s->lanes.resize(lanes_);
  for (size_t lane = 0; lane < lanes_; ++lane) {
    for (const Part& p : parts_) s->lanes[lane].parts.push_back(p.kernel->make_state());
    if (lane > 0) s->lanes[lane].stream = dnnl::stream(engine_);
  }
  return s;
}

uint64_t BandedKernel::scratchpad_bytes() const {
  if (lanes_ > 1) return lanes_ * lane_bytes_;
  uint64_t most = 0;
  for (const Part& p : parts_) most = std::max(most, p.kernel->scratchpad_bytes());
  return most;
}

bool BandedKernel::reads_at_run_time(size_t input) const {
  return std::any_of(parts_.begin(), parts_.end(), [&](const Part& p) { return p.kernel->reads_at_run_time(input); });
}

void BandedKernel::run(const KernelArgs& args) {
  auto* s = dynamic_cast<State*>(args.state);
  if (!s || s->lanes.size() != lanes_) fail_internal(where_ + ": run without the session's kernel state");
  if (args.inputs.empty() || args.inputs.size() > kMaxInputs || args.outputs.size() != 1)
    fail_internal(where_ + ": the executor passed the wrong number of tensors");
  const TensorView& x = args.inputs[0];
  const TensorView& y = args.outputs[0];
  if (x.byte_size() != in_bytes_ || y.capacity < out_bytes_ || y.byte_size() != out_bytes_)
    fail(where_ + ": the run-time shapes differ from the compile-time shapes");
  if (addend_ >= 0 && static_cast<size_t>(addend_) >= args.inputs.size())
    fail_internal(where_ + ": the fused Add input was not passed");
  if (addend_ >= 0 && args.inputs[static_cast<size_t>(addend_)].byte_size() != out_bytes_)
    fail(where_ + ": the fused Add input does not have the output's shape");
  // A session running on fewer threads than the kernel has lanes (one, while other processes
  // hold the cores) uses as many lanes as it has threads.
  const size_t lanes = std::min<size_t>({lanes_, static_cast<size_t>(std::max(omp_get_max_threads(), 1)), bands_.size()});
  if (lanes <= 1) {
    for (size_t i = 0; i < bands_.size(); ++i) run_band(i, 0, *s, args, args.stream);
    return;
  }
  std::exception_ptr error;
#pragma omp parallel num_threads(static_cast<int>(lanes))
  {
    const auto lane = static_cast<size_t>(omp_get_thread_num());
    const auto team = static_cast<size_t>(omp_get_num_threads());
    // Each band's kernels run on this thread alone: oneDNN runs a primitive called inside a
    // parallel region on the calling thread. The session's primitives, not their one-thread
    // forms: made for one thread, oneDNN's reorder of u8 rows into float32 blocks takes 2.6x as
    // long on one core (mobilenet_v2_dyn's depthwise ConvIntegers on AVX2).
    try {
      dnnl_stream* stream = lane == 0 ? args.stream : s->lanes[lane].stream.get();
      for (size_t i = lane; i < bands_.size(); i += team) run_band(i, lane, *s, args, stream);
    } catch (...) {
#pragma omp critical(memplan_banded_kernel_error)
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
}

void BandedKernel::run_band(size_t i, size_t lane, State& s, const KernelArgs& args, dnnl_stream* stream) const {
  const Band& b = bands_[i];
  const Part& p = parts_[b.part];
  std::array<TensorView, kMaxInputs> in{};
  std::array<TensorView, 1> out{};
  std::copy(args.inputs.begin(), args.inputs.end(), in.begin());
  in[0] = band_view(args.inputs[0], b.in_offset, p.in_span);
  if (addend_ >= 0) {
    const auto a = static_cast<size_t>(addend_);
    in[a] = band_view(args.inputs[a], b.out_offset, p.out_span);
  }
  out[0] = band_view(args.outputs[0], b.out_offset, p.out_span);
  p.kernel->run({std::span<const TensorView>(in.data(), args.inputs.size()), out, args.scratchpad + lane * lane_bytes_,
                 s.lanes[lane].parts[b.part].get(), stream});
}

std::string BandedKernel::implementation() const {
  std::string out = std::to_string(bands_.size()) + (cut_ == Cut::Rows ? " bands of rows: " : " bands of channels: ");
  // Each distinct part's once (the bands of a convolution differ only at the edges, in padding).
  std::vector<std::string> names;
  for (const Part& p : parts_)
    if (std::string name = p.kernel->implementation(); std::find(names.begin(), names.end(), name) == names.end())
      names.push_back(std::move(name));
  for (size_t i = 0; i < names.size(); ++i) out += (i ? "; " : "") + names[i];
  return out;
}

}  // namespace memplan::rt::dnnl_kernels
