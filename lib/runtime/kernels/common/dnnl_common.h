// Shared pieces of the oneDNN kernels (lib/runtime/kernels/dnnl_*.cpp only; not a public header).
//
// Every oneDNN kernel is a PrimitiveKernel: one primitive made at load time, its plain activation
// memories created with a null handle and re-pointed at the arena on each run, its constant
// weights reordered once into the layout the primitive prefers, and its scratchpad supplied by the
// planner (scratchpad_mode::user).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "memplan/error.h"
#include "runtime/dnnl_context.h"
#include "runtime/kernel.h"
#include "runtime/kernels/common/kernel_common.h"

namespace memplan::rt::dnnl_kernels {

using Dims = dnnl::memory::dims;  // std::vector<int64_t>

// ---- Node inspection ---------------------------------------------------------------------------

// where(), input_at(), output_at() and check_arity() are kernel_common.h's.

// Fails (Unsupported) unless every present input and output is float32 with a static shape.
void require_float32_static(const Node& node, const KernelEnv& env);
// The same, for the data types `types`.
void require_static(const Node& node, const KernelEnv& env, std::initializer_list<DType> types);

// The value's static dims (requires require_float32_static).
Dims dims_of(const Value* v);
int64_t product(const Dims& d, size_t begin = 0, size_t end = SIZE_MAX);
std::string dims_string(const Dims& d);  // "[1, 3, 224, 224]"

// ---- Memory descriptors and constants ----------------------------------------------------------

dnnl::memory::desc plain_md(const Dims& dims);  // f32, row-major
dnnl::memory::desc strided_md(const Dims& dims, const Dims& strides);
dnnl::memory::desc any_md(const Dims& dims);    // f32, format_tag::any
// `dims` of `type` in the layout a Value::channel_block names: 0 row-major (any rank); 8 or 16
// nChw8c / nChw16c and Value::kChannelsLast NHWC (4-D; blocks whole).
dnnl::memory::desc layout_md(const Dims& dims, dnnl::memory::data_type type, int layout);
// `dims` (4-D) float32 channel-blocked by `block` (8: nChw8c, 16: nChw16c; 0: plain).
dnnl::memory::desc blocked_md(const Dims& dims, int block);
// An activation as the layout passes left it (Value::channel_block), in its own data type.
dnnl::memory::desc activation_md(const Value* v);
// A pool's output: its own layout, or, when it is one pixel of a blocked or channels-last input's
// channels, that input's layout (the same bytes as plain, and what oneDNN's fast pools want).
dnnl::memory::desc pooled_md(const Dims& y, const Value* y_value, const Value* x_value);

// A memory the kernel owns holding the constant `v` (float32) laid out as `want`; `user`
// describes the constant's bytes (row-major, or a strided view of them). Reorders once.
dnnl::memory constant_memory(const Value* v, const dnnl::memory::desc& user, const dnnl::memory::desc& want,
                             DnnlContext& ctx, const std::string& where);
// A memory the kernel owns holding `bytes` of data described by `user`, reordered to `want`.
dnnl::memory reordered_memory(const void* data, uint64_t bytes, const dnnl::memory::desc& user,
                              const dnnl::memory::desc& want, DnnlContext& ctx, const std::string& what);
// The constant's float32 values (splats expanded).
std::vector<float> constant_floats(const Value* v, const std::string& where);
// The same for a tensor; `what` names it in the error for another data type.
std::vector<float> tensor_floats(const Tensor& t, const std::string& what);
// Channels [first, first + count) of a [rows, channels, inner] array: a convolution's weights cut
// between its input channels (inner = kernel taps) or its output channels (rows = 1).
std::vector<float> channel_slice(const std::vector<float>& w, int64_t rows, int64_t channels, int64_t inner,
                                 int64_t first, int64_t count);

// ---- Sliding-window geometry (Conv, ConvTranspose, pools) --------------------------------------

enum class AutoPad { NotSet, SameUpper, SameLower, Valid };

struct Window {
  Dims kernel, strides, dilations;  // ONNX conventions: dilation 1 = dense
  Dims pads_begin, pads_end;
  AutoPad auto_pad = AutoPad::NotSet;
};

// Reads kernel_shape (falls back on `kernel_fallback` when absent; required if that is empty),
// strides, dilations, pads and auto_pad, validating counts and ranges.
Window read_window(const Node& node, const std::string& where, size_t spatial, const Dims& kernel_fallback);

// For Conv and pooling: replaces pads according to auto_pad (SAME_*: output = ceil(in / stride)).
void resolve_forward_pads(Window& w, const Dims& in_spatial);

// For pooling: checks the output's spatial sizes (x, y: [N, C, spatial...]) against the window
// and returns the end pads that give exactly them (grown for ceil_mode windows).
Dims pool_end_pads(const Window& w, const Dims& x, const Dims& y, bool ceil_mode, const std::string& at);

inline int64_t effective_kernel(const Window& w, size_t i) { return (w.kernel[i] - 1) * w.dilations[i] + 1; }

// oneDNN's dilation convention: 0 = dense.
Dims dnnl_dilations(const Window& w);

// ---- The primitive kernel ----------------------------------------------------------------------

// The primitive, its constant memories and where each argument comes from are made at load and
// shared by every session; the memory objects run() re-points (activations, scratchpad, staging
// buffers) and the argument array naming them are per session (make_state()). oneDNN fixes a
// primitive's work split for the OpenMP thread count in effect when it is made, so a session
// made with fewer threads gets a primitive of its own, made for its count with the same layouts.
class PrimitiveKernel : public Kernel {
 public:
  PrimitiveKernel(const Node& node, const KernelEnv& env);
  void run(const KernelArgs& args) final;
  std::unique_ptr<KernelState> make_state() const final;
  uint64_t scratchpad_bytes() const override { return scratchpad_bytes_ + staged_bytes_; }
  bool reads_at_run_time(size_t input) const override;
  bool may_overwrite_input(size_t input) const override;
  // oneDNN's implementation of the primitive, then of each staged tensor's reorder.
  std::string implementation() const override;
  // A staged input and a staged output (bind_input_staged, bind_output_staged).
  bool reorders_both_ways() const override;
  // The primitive may write output 0 over `input` (oneDNN allows src = dst for it).
  void allow_in_place(size_t input) { in_place_.push_back(input); }

  // Load-time wiring. Run-time bound memories are created with a null handle; run() points them
  // at the TensorViews. Binding memories `md` must describe exactly the view's bytes.
  void set_primitive(const dnnl::primitive_desc& pd);
  void bind_input(int arg, size_t input_index, const dnnl::memory::desc& md);
  void bind_output(int arg, size_t output_index, const dnnl::memory::desc& md);
  void bind_memory(int arg, dnnl::memory m);  // a constant the kernel owns
  // A tensor the primitive wants in another layout (`want`) than the tensor's (`user`): each run
  // reorders an input into the kernel's scratchpad first, or an output out of it afterwards.
  // Same as bind_input / bind_output when the two agree. Call after set_primitive. `seen`: how the
  // primitive reads those bytes where not as `want` (the same bytes in another shape: a grouped
  // 1x1 convolution's batched-matmul view of a channels-last tensor); empty: as `want`.
  void bind_input_staged(int arg, size_t input_index, const dnnl::memory::desc& user, const dnnl::memory::desc& want,
                         const dnnl::memory::desc& seen = {});
  // An input the primitive reads zero-padded (`padded`, in the primitive's layout): each run zeroes
  // the staging buffer and reorders the input into it at `offsets` (a convolution whose padding
  // oneDNN's fast kernels refuse reads a padded copy instead, with no padding of its own).
  void bind_input_padded(int arg, size_t input_index, const dnnl::memory::desc& user, const dnnl::memory::desc& padded,
                         const Dims& offsets);
  // `preload_input` >= 0: the staged output starts as that input (same shape and layout as the
  // output), for primitives that accumulate into their destination (a Conv's fused Add).
  void bind_output_staged(int arg, size_t output_index, const dnnl::memory::desc& user, const dnnl::memory::desc& want,
                          int preload_input = -1, const dnnl::memory::desc& seen = {});
  // A staged float32 input less a zero point: want = user - zero point, the constant `zp` or, with
  // `zp_input` >= 0, that input's one 8-bit value, read on each run. (oneDNN 2.6's reorder has
  // source zero points, but its jit reorder drops them on larger tensors: the kernel subtracts.)
  void bind_input_shifted(int arg, size_t input_index, const dnnl::memory::desc& user, const dnnl::memory::desc& want,
                          int32_t zp, int zp_input);

  DnnlContext& ctx() const { return *ctx_; }
  const std::string& where() const { return where_; }

 protected:
  // Hooks around the primitive's execution. They must not allocate, and must not change the
  // kernel (sessions run it concurrently).
  virtual void before_execute(const KernelArgs&) {}
  // Between the primitive and the reorders of its staged outputs: `written` is output 0 as the
  // primitive wrote it (the tensor itself, or its staging buffer in the primitive's layout).
  virtual void after_primitive(const KernelArgs&, float* /*written*/, uint64_t /*bytes*/) {}
  virtual void after_execute(const KernelArgs&) {}

 private:
  struct Slot {
    dnnl::memory::desc md;
    bool output = false;
    size_t index = 0;
    uint64_t bytes = 0;
  };
  struct Staged {
    dnnl::memory::desc user, want;
    // The primitive's view of the staged bytes (bind_input_staged; bind_input_padded: the whole
    // padded buffer, where `want` is the interior the reorder writes).
    dnnl::memory::desc seen;
    bool zero_first = false;  // zeroed before each reorder into it (bind_input_padded)
    dnnl::primitive reorder;
    std::string reorder_impl;  // oneDNN's name for the reorder's implementation
    bool output = false;
    int preload = -1;  // output: the input copied (reordered) into the staged buffer first
    dnnl::primitive preload_reorder;
    // Shifted inputs (bind_input_shifted): the zero point, or the input holding it.
    bool shifted = false;
    int32_t zp = 0;
    int zp_input = -1;
    size_t index = 0;
    uint64_t user_bytes = 0, offset = 0;  // offset into the scratchpad
  };
  // Where an argument of the primitive comes from, in the order the bind_* calls gave them.
  struct Arg {
    enum class From : uint8_t { Slot, Staged, Owned, Scratchpad } from;
    int arg = 0;
    size_t index = 0;  // into slots_, staged_ or owned_
  };
  struct State;
  struct Form;
  Staged& bind_staged(int arg, bool output, size_t index, const dnnl::memory::desc& user,
                      const dnnl::memory::desc& want, int preload_input, const dnnl::memory::desc& seen);
  void point_slots(State& s, const KernelArgs& args) const;
  void point_staged(State& s, const KernelArgs& args) const;  // staged memories at their tensors and scratchpad
  // `form`: the reorders made for this run's threads, or null for the kernel's own.
  void reorder_staged(State& s, const Form* form, dnnl_stream* stream, bool outputs, const KernelArgs& args) const;
  void shift_staged(const Staged& st, const KernelArgs& args) const;
  // The primitive made again for the calling thread's OpenMP thread count, with the same memory
  // layouts and a scratchpad no larger (fails, naming the fix, when oneDNN has none).
  dnnl::primitive primitive_for_current_threads() const;
  // That primitive and the staged tensors' reorders, made for the current count.
  Form form_for_current_threads() const;

  DnnlContext* ctx_;
  std::string where_;
  std::vector<Staged> staged_;
  uint64_t staged_bytes_ = 0;
  // The primitive's own description (a primitive keeps a copy of the one it was made from;
  // holding that one too would keep a second copy of every kernel's description for the run).
  const_dnnl_primitive_desc_t pd() const { return primitive_ ? primitive_.get_primitive_desc() : nullptr; }

  dnnl::primitive primitive_;
  int threads_ = 1;  // OpenMP threads primitive_ was made for
  dnnl::memory::desc scratchpad_md_;
  std::vector<Slot> slots_;
  std::vector<dnnl::memory> owned_;
  std::vector<Arg> args_;
  uint64_t scratchpad_bytes_ = 0;
  std::vector<size_t> in_place_;
};

// Appends the node's fused activation (ir/fused_activation.h) as an eltwise post-op.
void append_activation(dnnl::post_ops& po, const Node& node, const std::string& where);

// A primitive_attr with scratchpad_mode::user.
dnnl::primitive_attr user_scratchpad_attr();

// Creates a primitive descriptor, turning "no implementation" into an Unsupported error naming
// the node. `make` is a callable returning the primitive_desc.
template <typename F>
auto make_pd(const std::string& where, F&& make) -> decltype(make()) {
  try {
    return make();
  } catch (const dnnl::error& e) {
    fail_unsupported(where + ": oneDNN cannot run this configuration (" + e.what() + ")");
  }
}

// A kernel that does nothing (outputs with no elements).
class NoopKernel : public Kernel {
 public:
  void run(const KernelArgs&) override {}
};

// True when the node's first output has no elements (the factories return a NoopKernel).
bool empty_output(const Node& node);

}  // namespace memplan::rt::dnnl_kernels
