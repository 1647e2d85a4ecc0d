#include "runtime/kernels/dnnl/banded_kernel.h"

#include <algorithm>
#include <array>

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
  std::vector<std::unique_ptr<KernelState>> parts;
};

BandedKernel::BandedKernel(Cut cut, std::vector<Part> parts, std::vector<Band> bands, uint64_t in_bytes,
                           uint64_t out_bytes, int addend, const std::string& where)
    : cut_(cut), parts_(std::move(parts)), bands_(std::move(bands)), in_bytes_(in_bytes), out_bytes_(out_bytes), addend_(addend),
      where_(where) {
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
  for (const Part& p : parts_) s->parts.push_back(p.kernel->make_state());
  return s;
}

uint64_t BandedKernel::scratchpad_bytes() const {
  uint64_t most = 0;
  for (const Part& p : parts_) most = std::max(most, p.kernel->scratchpad_bytes());
  return most;
}

bool BandedKernel::reads_at_run_time(size_t input) const {
  return std::any_of(parts_.begin(), parts_.end(), [&](const Part& p) { return p.kernel->reads_at_run_time(input); });
}

void BandedKernel::run(const KernelArgs& args) {
  auto* s = dynamic_cast<State*>(args.state);
  if (!s || s->parts.size() != parts_.size()) fail_internal(where_ + ": run without the session's kernel state");
  if (args.inputs.empty() || args.inputs.size() > kMaxInputs || args.outputs.size() != 1)
    fail_internal(where_ + ": the executor passed the wrong number of tensors");
  const TensorView& x = args.inputs[0];
  const TensorView& y = args.outputs[0];
  if (x.byte_size() != in_bytes_ || y.capacity < out_bytes_ || y.byte_size() != out_bytes_)
    fail(where_ + ": the run-time shapes differ from the compile-time shapes");
  if (addend_ >= 0 && static_cast<size_t>(addend_) >= args.inputs.size())
    fail_internal(where_ + ": the fused Add input was not passed");
  const bool has_addend = addend_ >= 0;
  if (has_addend && args.inputs[static_cast<size_t>(addend_)].byte_size() != out_bytes_)
    fail(where_ + ": the fused Add input does not have the output's shape");
  std::array<TensorView, kMaxInputs> in{};
  std::array<TensorView, 1> out{};
  std::copy(args.inputs.begin(), args.inputs.end(), in.begin());
  for (const Band& b : bands_) {
    const Part& p = parts_[b.part];
    in[0] = band_view(x, b.in_offset, p.in_span);
    if (has_addend) in[static_cast<size_t>(addend_)] = band_view(args.inputs[static_cast<size_t>(addend_)], b.out_offset, p.out_span);
    out[0] = band_view(y, b.out_offset, p.out_span);
    p.kernel->run({std::span<const TensorView>(in.data(), args.inputs.size()), out, args.scratchpad,
                   s->parts[b.part].get(), args.stream});
  }
}

}  // namespace memplan::rt::dnnl_kernels
