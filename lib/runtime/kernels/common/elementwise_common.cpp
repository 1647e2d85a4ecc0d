#include "runtime/kernels/common/elementwise_common.h"

#include <algorithm>
#include <optional>

#include "runtime/run_threads.h"

namespace memplan::rt::elt {

std::string Shape::str() const {
  std::string s = "[";
  for (int i = 0; i < rank; ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

bool fixed_shape(const Value* v) {
  return v && v->type.is_static() && !v->shape_varies && v->type.dims.size() <= static_cast<size_t>(kMaxRank);
}

Shape static_shape(const Value* v) {
  Shape s;
  s.rank = static_cast<int>(v->type.dims.size());
  for (int i = 0; i < s.rank; ++i) s.dims[i] = v->type.dims[i].value;
  return s;
}

bool all_fixed(const Node& n) {
  for (const Value* v : n.inputs)
    if (v && !fixed_shape(v)) return false;
  for (const Value* v : n.outputs)
    if (v && !fixed_shape(v)) return false;
  return true;
}

bool broadcast(const Shape& a, const Shape& b, Shape& out) {
  const int ranks[] = {a.rank, b.rank};
  const int64_t* dims[] = {a.dims.data(), b.dims.data()};
  return broadcast_dims(2, ranks, dims, out.rank, out.dims.data());
}

std::array<int64_t, kMaxRank> row_major_strides(const Shape& s) {
  std::array<int64_t, kMaxRank> st{};
  int64_t acc = 1;
  for (int i = s.rank - 1; i >= 0; --i) {
    st[i] = acc;
    acc *= s.dims[i];
  }
  return st;
}

std::array<int64_t, kMaxRank> broadcast_strides(const Shape& in, const Shape& out) {
  const Shape padded = pad_rank(in, out.rank);
  std::array<int64_t, kMaxRank> st = row_major_strides(padded);
  for (int i = 0; i < out.rank; ++i)
    if (padded.dims[i] == 1 && out.dims[i] != 1) st[i] = 0;
  return st;
}

Shape pad_rank(const Shape& in, int rank) {
  if (in.rank >= rank) return in;
  Shape s;
  s.rank = rank;
  const int pad = rank - in.rank;
  for (int i = 0; i < rank; ++i) s.dims[i] = i < pad ? 1 : in.dims[i - pad];
  return s;
}

void set_output_shape(TensorView& out, const Shape& s, const std::string& what) {
  if (!out.data) return;
  const uint64_t bytes = s.count() * dtype_size(out.dtype);
  if (bytes > out.capacity)
    fail(what + ": the output of shape " + s.str() + " needs " + std::to_string(bytes) + " bytes, its buffer holds " +
         std::to_string(out.capacity));
  out.rank = s.rank;
  out.dims = s.dims;
}

dnnl::memory::data_type dnnl_type(DType t) {
  using dt = dnnl::memory::data_type;
  switch (t) {
    case DType::Float32: return dt::f32;
    case DType::Int32: return dt::s32;
    case DType::Int8: return dt::s8;
    case DType::Uint8: return dt::u8;
    default: return dt::undef;
  }
}

dnnl::memory::desc plain_md(const Shape& s, dnnl::memory::data_type dt) {
  dnnl::memory::dims dims, strides;
  if (s.rank == 0) return dnnl::memory::desc({1}, dt, dnnl::memory::dims{1});
  const auto st = row_major_strides(s);
  for (int i = 0; i < s.rank; ++i) {
    dims.push_back(s.dims[i]);
    strides.push_back(st[i]);
  }
  return dnnl::memory::desc(dims, dt, strides);
}

dnnl::primitive_attr user_scratchpad_attr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

DnnlStep::DnnlStep(DnnlContext& ctx, const dnnl::primitive_desc& pd, StepThreads threads)
    : ctx_(&ctx), prim_(pd), impl_(pd.impl_info_str()), threads_(threads) {
  const dnnl::memory::desc sp = pd.scratchpad_desc();
  scratchpad_bytes_ = sp.get_size();
  if (scratchpad_bytes_ > 0) {
    args_.push_back({DNNL_ARG_SCRATCHPAD, sp, dnnl::memory()});
    scratchpad_slot_ = static_cast<int>(args_.size() - 1);
  }
}

size_t DnnlStep::arg(int which, const dnnl::memory::desc& md) {
  args_.push_back({which, md, dnnl::memory()});
  largest_operand_ = std::max<uint64_t>(largest_operand_, md.get_size());
  return args_.size() - 1;
}

void DnnlStep::fixed_arg(int which, const dnnl::memory& m) {
  args_.push_back({which, m.get_desc(), m});
  largest_operand_ = std::max<uint64_t>(largest_operand_, m.get_desc().get_size());
}

DnnlStep::State DnnlStep::make_state() const {
  State s;
  for (const Arg& a : args_) {
    s.mems.push_back(a.fixed ? a.fixed : dnnl::memory(a.md, ctx_->engine, static_cast<void*>(DNNL_MEMORY_NONE)));
    s.args.push_back(dnnl_exec_arg_t{a.which, s.mems.back().get()});
  }
  return s;
}

void DnnlStep::bind(State& s, size_t slot, const void* data) const {
  if (dnnl_memory_set_data_handle_v2(s.mems[slot].get(), const_cast<void*>(data), nullptr) != dnnl_success)
    fail_internal("could not set a oneDNN data handle");
}

void DnnlStep::execute(State& s, std::byte* scratchpad, dnnl_stream* stream) const {
  if (scratchpad_slot_ >= 0) bind(s, static_cast<size_t>(scratchpad_slot_), scratchpad);
  if (!stream) stream = ctx_->stream.get();
  // A region of one thread is no region: oneDNN calls its kernel directly (no team, no wake-up).
  std::optional<ThreadScope> one;
  if (on_calling_thread()) one.emplace(1);
  // The C call takes the argument array built with the state; the C++ execute() would build a map.
  dnnl_status_t st = dnnl_primitive_execute(prim_.get(), stream, static_cast<int>(s.args.size()), s.args.data());
  if (st == dnnl_success) st = dnnl_stream_wait(stream);
  if (st != dnnl_success) fail_internal("oneDNN primitive execution failed with status " + std::to_string(st));
}

DnnlStep::State& step_state(const KernelArgs& args, size_t i, const std::string& where) {
  auto* s = dynamic_cast<DnnlStepStates*>(args.state);
  if (!s || i >= s->steps.size()) fail_internal(where + ": run without the session's kernel state");
  return s->steps[i];
}

}  // namespace memplan::rt::elt
