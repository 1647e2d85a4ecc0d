// Helpers shared by the elementwise, binary, concat, reduce, resize and RNN kernels: run-time
// shapes and numpy broadcasting, output-shape checks, and a oneDNN primitive whose arguments are
// bound once at load so that running it allocates nothing on our side.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "memplan/error.h"
#include "runtime/dnnl_context.h"
#include "runtime/kernel.h"
#include "runtime/kernels/common/kernel_common.h"
#include "runtime/kernels/common/parallel_chunks.h"

namespace memplan::rt::elt {

// A tensor shape with no heap storage (kernels keep these and build them at run time).
struct Shape {
  int rank = 0;
  std::array<int64_t, kMaxRank> dims{};

  uint64_t count() const {
    uint64_t n = 1;
    for (int i = 0; i < rank; ++i) n *= static_cast<uint64_t>(dims[i]);
    return n;
  }
  bool operator==(const Shape& o) const {
    if (rank != o.rank) return false;
    for (int i = 0; i < rank; ++i)
      if (dims[i] != o.dims[i]) return false;
    return true;
  }
  static Shape of(const TensorView& v) {
    Shape s;
    s.rank = v.rank;
    s.dims = v.dims;
    return s;
  }
  std::string str() const;  // "[2, 3]" for messages
};

// True when the value's shape is fixed at compile time (then oneDNN primitives can be built).
bool fixed_shape(const Value* v);
// The compile-time shape of a value with fixed_shape().
Shape static_shape(const Value* v);
// The value's dtype, Undefined for an omitted one.
inline DType dtype_of(const Value* v) { return v ? v->type.dtype : DType::Undefined; }
// True when every present input and output of the node has a fixed shape.
bool all_fixed(const Node& n);

// Numpy broadcasting of a and b into out; false when the shapes are incompatible.
bool broadcast(const Shape& a, const Shape& b, Shape& out);
// Element strides of `in` (row-major) aligned right against `out`, 0 on broadcast dims.
std::array<int64_t, kMaxRank> broadcast_strides(const Shape& in, const Shape& out);
// Row-major element strides of s.
std::array<int64_t, kMaxRank> row_major_strides(const Shape& s);
// `in` with leading 1s to reach `rank`.
Shape pad_rank(const Shape& in, int rank);

// Gives an output view a run-time shape, failing if it would not fit the planned buffer.
void set_output_shape(TensorView& out, const Shape& s, const std::string& what);

// Calls f(out_offset, a_offset, b_offset, n, a_step, b_step) for every innermost run of `out`
// (n elements), where a and b advance by a_step and b_step (0 when broadcast) per element; sa and
// sb are broadcast_strides() of a and b against `out`. No heap memory.
template <typename F>
void for_each_run(const Shape& out, const std::array<int64_t, kMaxRank>& sa, const std::array<int64_t, kMaxRank>& sb,
                  F&& f) {
  if (out.count() == 0) return;
  if (out.rank == 0) {
    f(int64_t{0}, int64_t{0}, int64_t{0}, int64_t{1}, int64_t{0}, int64_t{0});
    return;
  }
  const int last = out.rank - 1;
  const int64_t inner = out.dims[last];
  std::array<int64_t, kMaxRank> idx{};
  int64_t o = 0;
  for (;;) {
    int64_t oa = 0, ob = 0;
    for (int d = 0; d < last; ++d) {
      oa += idx[d] * sa[d];
      ob += idx[d] * sb[d];
    }
    f(o, oa, ob, inner, sa[last], sb[last]);
    o += inner;
    if (!next_index(idx, out.dims, last)) return;
  }
}

// oneDNN helpers ---------------------------------------------------------------------------------

dnnl::memory::data_type dnnl_type(DType t);  // f32, s32, s8, u8; undef for the rest
// A plain row-major descriptor (a rank-0 shape becomes {1}).
dnnl::memory::desc plain_md(const Shape& s, dnnl::memory::data_type dt);

// How a step's work goes to the run's threads. oneDNN's eltwise, binary and reduction kernels
// split any tensor across every thread; on a small one, waking the others costs more than the
// work (100 Sigmoids, Tanhs, Muls and Adds of 16384 floats: 0.55 ms on one thread, 0.64 on two;
// of 512: 0.07 and 0.17; an LSTM decoder's gates are such tensors). Streamed, the step runs on the
// calling thread alone where its largest operand is below two of parallel_chunks' chunks, as
// memplan's own loops do.
enum class StepThreads {
  AsOneDnn,  // oneDNN's own split (convolutions, RNNs: work is not the operands' bytes)
  Streamed,  // work in proportion to the operands' bytes
};

// One primitive with its arguments: activations are memory objects with no data, pointed at
// arena buffers by bind() before each execute(); weights are bound for good. The primitive and
// the weights are made at load and shared by every session; the activation memories and the
// argument array are a State, one per session (make_state()).
class DnnlStep {
 public:
  struct State {
    std::vector<dnnl::memory> mems;  // per argument; the fixed ones are the shared weights
    std::vector<dnnl_exec_arg_t> args;
  };

  DnnlStep(DnnlContext& ctx, const dnnl::primitive_desc& pd, StepThreads threads = StepThreads::AsOneDnn);
  // Adds an argument to bind at run time; returns its slot for bind().
  size_t arg(int which, const dnnl::memory::desc& md);
  // Adds an argument whose memory is fixed (weights made at load).
  void fixed_arg(int which, const dnnl::memory& m);
  State make_state() const;
  void bind(State& s, size_t slot, const void* data) const;
  // Executes on `stream` (null: the load-time context's) with `scratchpad` (scratchpad_bytes()
  // bytes) and waits.
  void execute(State& s, std::byte* scratchpad, dnnl_stream* stream) const;
  uint64_t scratchpad_bytes() const { return scratchpad_bytes_; }
  // oneDNN's name for the implementation it chose (impl_info_str(): "jit:uni", "ref:any", ...).
  const std::string& implementation() const { return impl_; }
  // Whether execute() keeps to the calling thread (StepThreads::Streamed and small operands).
  bool on_calling_thread() const { return threads_ == StepThreads::Streamed && largest_operand_ < 2 * kParallelChunkBytes; }

 private:
  struct Arg {
    int which = 0;
    dnnl::memory::desc md;
    dnnl::memory fixed;  // null for a run-time bound one
  };
  DnnlContext* ctx_;
  dnnl::primitive prim_;
  std::vector<Arg> args_;
  int scratchpad_slot_ = -1;
  uint64_t scratchpad_bytes_ = 0;
  std::string impl_;
  StepThreads threads_;
  uint64_t largest_operand_ = 0;  // bytes, over every argument but the scratchpad
};

// The state of a kernel made of DnnlSteps: one State per step.
struct DnnlStepStates final : KernelState {
  std::vector<DnnlStep::State> steps;
};
// A DnnlStepStates with one State per present step (null when there are none).
template <typename It, typename StepOf>
std::unique_ptr<KernelState> make_step_states(It begin, It end, StepOf&& step_of) {
  if (begin == end) return nullptr;
  auto s = std::make_unique<DnnlStepStates>();
  for (It it = begin; it != end; ++it) s->steps.push_back(step_of(*it).make_state());
  return s;
}
// The session's State of step `i` (fails when the executor passed none).
DnnlStep::State& step_state(const KernelArgs& args, size_t i, const std::string& where);

// Attributes every primitive here is made with: a user-provided scratchpad.
dnnl::primitive_attr user_scratchpad_attr();

}  // namespace memplan::rt::elt
