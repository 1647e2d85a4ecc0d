#include "runtime/kernels/common/dnnl_common.h"

#include <algorithm>
#include <cstring>

#include "ir/dtype.h"

namespace memplan::rt::dnnl_kernels {

void require_float32_static(const Node& node, const KernelEnv& env) {
  auto check = [&](const Value* v, const char* role) {
    if (!v) return;
    if (v->type.dtype != DType::Float32)
      fail_unsupported(where(node, env) + ": " + dtype_name(v->type.dtype) + " is not supported, only float32 (" +
                       role + " '" + v->name + "')");
    if (!v->type.is_static() || v->shape_varies)
      fail_unsupported(where(node, env) + ": " + role + " '" + v->name + "' has shape " + v->type.shape_string() +
                       "; the oneDNN kernels need static shapes");
  };
  for (const Value* v : node.inputs) check(v, "input");
  for (const Value* v : node.outputs) check(v, "output");
}

Dims dims_of(const Value* v) { return v->type.static_dims(); }

int64_t product(const Dims& d, size_t begin, size_t end) {
  // Iterators, not d[i]: with an index up to SIZE_MAX, GCC 12 at -O3 warns that i * 8 could
  // overflow (-Waggressive-loop-optimizations), though no vector is that long.
  const size_t stop = std::min(end, d.size());
  int64_t p = 1;
  for (auto it = d.begin() + static_cast<std::ptrdiff_t>(std::min(begin, stop)); it != d.begin() + static_cast<std::ptrdiff_t>(stop); ++it)
    p *= *it;
  return p;
}

std::string dims_string(const Dims& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}

dnnl::memory::desc plain_md(const Dims& dims) {
  Dims strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * std::max<int64_t>(dims[i], 1);
  return strided_md(dims, strides);
}

dnnl::memory::desc strided_md(const Dims& dims, const Dims& strides) {
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, strides);
}

dnnl::memory::desc blocked_md(const Dims& dims, int block) {
  using tag = dnnl::memory::format_tag;
  if (block == 0) return plain_md(dims);
  if (dims.size() != 4 || (block != 8 && block != 16) || dims[1] % block != 0)
    fail_internal("a channel block of " + std::to_string(block) + " does not fit " + dims_string(dims));
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, block == 16 ? tag::nChw16c : tag::nChw8c);
}

dnnl::memory::desc activation_md(const Value* v) { return blocked_md(dims_of(v), v->channel_block); }

dnnl::memory::desc pooled_md(const Dims& y, const Value* y_value, const Value* x_value) {
  if (y_value->channel_block) return blocked_md(y, y_value->channel_block);
  const bool one_pixel = y.size() == 4 && y[2] == 1 && y[3] == 1;
  return one_pixel && x_value->channel_block ? blocked_md(y, x_value->channel_block) : plain_md(y);
}

dnnl::memory::desc any_md(const Dims& dims) {
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, dnnl::memory::format_tag::any);
}

namespace {

std::vector<std::byte> constant_bytes(const Value* v, const std::string& where) {
  if (!v || !v->constant) fail_internal(where + ": a constant input has no data");
  const Tensor& t = *v->constant;
  if (t.dtype != DType::Float32)
    fail_unsupported(where + ": constant '" + v->name + "' is " + dtype_name(t.dtype) + ", only float32 is supported");
  if (static_cast<int64_t>(t.element_count()) != product(dims_of(v)))
    fail_internal(where + ": constant '" + v->name + "' has " + std::to_string(t.element_count()) +
                  " elements, its type says " + v->type.shape_string());
  return t.materialize();
}

}  // namespace

std::vector<float> constant_floats(const Value* v, const std::string& where) {
  std::vector<std::byte> bytes = constant_bytes(v, where);
  std::vector<float> out(bytes.size() / sizeof(float));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
  return out;
}

dnnl::memory reordered_memory(const void* data, uint64_t bytes, const dnnl::memory::desc& user,
                              const dnnl::memory::desc& want, DnnlContext& ctx, const std::string& what) {
  if (user.get_size() > bytes) fail_internal(what + " is smaller than its memory descriptor");
  dnnl::memory src(user, ctx.engine, const_cast<void*>(data));
  dnnl::memory dst(want, ctx.engine);  // owns its buffer
  dnnl::reorder(src, dst).execute(ctx.stream, src, dst);
  ctx.stream.wait();
  return dst;
}

dnnl::memory constant_memory(const Value* v, const dnnl::memory::desc& user, const dnnl::memory::desc& want,
                             DnnlContext& ctx, const std::string& where) {
  std::vector<std::byte> bytes = constant_bytes(v, where);
  return reordered_memory(bytes.data(), bytes.size(), user, want, ctx, where + ": constant '" + v->name + "'");
}

Window read_window(const Node& node, const std::string& where, size_t spatial, const Dims& kernel_fallback) {
  Window w;
  auto count_error = [&](const char* name, size_t want, size_t got) {
    fail(where + ": attribute '" + name + "' has " + std::to_string(got) + " values, expected " +
         std::to_string(want));
  };
  w.kernel = node.attr_ints("kernel_shape");
  if (w.kernel.empty()) {
    if (kernel_fallback.empty()) fail(where + ": attribute 'kernel_shape' is required");
    w.kernel = kernel_fallback;
  } else if (!kernel_fallback.empty() && w.kernel != kernel_fallback) {
    fail(where + ": kernel_shape " + dims_string(w.kernel) + " does not match the weights' spatial shape " +
         dims_string(kernel_fallback));
  }
  if (w.kernel.size() != spatial) count_error("kernel_shape", spatial, w.kernel.size());

  w.strides = node.attr_ints("strides");
  if (w.strides.empty()) w.strides.assign(spatial, 1);
  if (w.strides.size() != spatial) count_error("strides", spatial, w.strides.size());
  w.dilations = node.attr_ints("dilations");
  if (w.dilations.empty()) w.dilations.assign(spatial, 1);
  if (w.dilations.size() != spatial) count_error("dilations", spatial, w.dilations.size());
  Dims pads = node.attr_ints("pads");
  if (pads.empty()) pads.assign(2 * spatial, 0);
  if (pads.size() != 2 * spatial) count_error("pads", 2 * spatial, pads.size());
  w.pads_begin.assign(pads.begin(), pads.begin() + static_cast<std::ptrdiff_t>(spatial));
  w.pads_end.assign(pads.begin() + static_cast<std::ptrdiff_t>(spatial), pads.end());

  for (size_t i = 0; i < spatial; ++i) {
    if (w.kernel[i] < 1) fail(where + ": kernel_shape " + dims_string(w.kernel) + " must be positive");
    if (w.strides[i] < 1) fail(where + ": strides " + dims_string(w.strides) + " must be positive");
    if (w.dilations[i] < 1) fail(where + ": dilations " + dims_string(w.dilations) + " must be positive");
    if (w.pads_begin[i] < 0 || w.pads_end[i] < 0) fail(where + ": pads " + dims_string(pads) + " must not be negative");
  }

  std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
  if (auto_pad == "NOTSET" || auto_pad.empty()) w.auto_pad = AutoPad::NotSet;
  else if (auto_pad == "SAME_UPPER") w.auto_pad = AutoPad::SameUpper;
  else if (auto_pad == "SAME_LOWER") w.auto_pad = AutoPad::SameLower;
  else if (auto_pad == "VALID") w.auto_pad = AutoPad::Valid;
  else fail(where + ": auto_pad '" + auto_pad + "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
  return w;
}

void resolve_forward_pads(Window& w, const Dims& in_spatial) {
  if (w.auto_pad == AutoPad::NotSet) return;
  for (size_t i = 0; i < in_spatial.size(); ++i) {
    if (w.auto_pad == AutoPad::Valid) {
      w.pads_begin[i] = w.pads_end[i] = 0;
      continue;
    }
    int64_t out = (in_spatial[i] + w.strides[i] - 1) / w.strides[i];
    int64_t total = std::max<int64_t>(0, (out - 1) * w.strides[i] + effective_kernel(w, i) - in_spatial[i]);
    int64_t half = total / 2;
    w.pads_begin[i] = w.auto_pad == AutoPad::SameUpper ? half : total - half;
    w.pads_end[i] = total - w.pads_begin[i];
  }
}

Dims dnnl_dilations(const Window& w) {
  Dims d(w.dilations.size());
  for (size_t i = 0; i < d.size(); ++i) d[i] = w.dilations[i] - 1;
  return d;
}

dnnl::primitive_attr user_scratchpad_attr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

bool empty_output(const Node& node) {
  const Value* y = output_at(node, 0);
  return y && y->type.is_static() && product(dims_of(y)) == 0;
}

// ---- PrimitiveKernel ---------------------------------------------------------------------------

PrimitiveKernel::PrimitiveKernel(const Node& node, const KernelEnv& env)
    : ctx_(env.dnnl), where_(rt::where(node, env)) {
  if (!ctx_) fail_internal(where_ + ": no oneDNN context");
}

void PrimitiveKernel::set_primitive(const dnnl::primitive_desc& pd) {
  primitive_ = dnnl::primitive(pd);
  dnnl::memory::desc sp = pd.scratchpad_desc();
  scratchpad_bytes_ = sp.get_size();
  if (scratchpad_bytes_ > 0) {
    scratchpad_ = dnnl::memory(sp, ctx_->engine, nullptr);
    exec_args_.push_back({DNNL_ARG_SCRATCHPAD, scratchpad_.get()});
  }
}

void PrimitiveKernel::bind_input(int arg, size_t input_index, const dnnl::memory::desc& md) {
  Slot s{dnnl::memory(md, ctx_->engine, nullptr), false, input_index, md.get_size()};
  exec_args_.push_back({arg, s.mem.get()});
  slots_.push_back(std::move(s));
}

void PrimitiveKernel::bind_output(int arg, size_t output_index, const dnnl::memory::desc& md) {
  Slot s{dnnl::memory(md, ctx_->engine, nullptr), true, output_index, md.get_size()};
  exec_args_.push_back({arg, s.mem.get()});
  slots_.push_back(std::move(s));
}

void PrimitiveKernel::bind_staged(int arg, bool output, size_t index, const dnnl::memory::desc& user,
                                  const dnnl::memory::desc& want, int preload_input) {
  if (user == want) return output ? bind_output(arg, index, user) : bind_input(arg, index, user);
  if (!primitive_) fail_internal(where_ + ": staged tensors are bound after set_primitive");
  Staged st;
  st.user = dnnl::memory(user, ctx_->engine, nullptr);
  st.staged = dnnl::memory(want, ctx_->engine, nullptr);
  st.reorder = output ? dnnl::reorder(dnnl::reorder::primitive_desc(ctx_->engine, want, ctx_->engine, user))
                      : dnnl::reorder(dnnl::reorder::primitive_desc(ctx_->engine, user, ctx_->engine, want));
  st.output = output;
  st.index = index;
  if (output && preload_input >= 0) {
    st.preload = preload_input;
    st.preload_user = dnnl::memory(user, ctx_->engine, nullptr);
    st.preload_reorder = dnnl::reorder(dnnl::reorder::primitive_desc(ctx_->engine, user, ctx_->engine, want));
  }
  st.user_bytes = user.get_size();
  // Staging buffers follow the primitive's own scratchpad, 64-byte aligned.
  st.offset = (scratchpad_bytes_ + staged_bytes_ + 63) / 64 * 64;
  staged_bytes_ = st.offset + want.get_size() - scratchpad_bytes_;
  exec_args_.push_back({arg, st.staged.get()});
  staged_.push_back(std::move(st));
}

void PrimitiveKernel::bind_input_staged(int arg, size_t input_index, const dnnl::memory::desc& user,
                                        const dnnl::memory::desc& want) {
  bind_staged(arg, false, input_index, user, want, -1);
}

void PrimitiveKernel::bind_output_staged(int arg, size_t output_index, const dnnl::memory::desc& user,
                                         const dnnl::memory::desc& want, int preload_input) {
  bind_staged(arg, true, output_index, user, want, preload_input);
}

void PrimitiveKernel::point_staged(const KernelArgs& args) {
  for (Staged& st : staged_) {
    std::span<const TensorView> views = st.output ? std::span<const TensorView>(args.outputs) : args.inputs;
    if (st.index >= views.size()) fail_internal(where_ + ": the executor passed too few tensors");
    const TensorView& v = views[st.index];
    if (v.byte_size() != st.user_bytes || (st.output && v.capacity < st.user_bytes))
      fail(where_ + ": the run-time shape of " + (st.output ? "output " : "input ") + std::to_string(st.index) +
           " differs from its compile-time shape");
    if (!args.scratchpad) fail_internal(where_ + ": no scratchpad was given");
    dnnl_memory_set_data_handle_v2(st.user.get(), v.data, nullptr);
    dnnl_memory_set_data_handle_v2(st.staged.get(), args.scratchpad + st.offset, nullptr);
    if (st.preload >= 0) {
      const auto p = static_cast<size_t>(st.preload);
      if (p >= args.inputs.size() || args.inputs[p].byte_size() != st.user_bytes)
        fail(where_ + ": input " + std::to_string(p) + " does not have the output's shape");
      dnnl_memory_set_data_handle_v2(st.preload_user.get(), args.inputs[p].data, nullptr);
    }
  }
}

void PrimitiveKernel::reorder_staged(bool outputs) {
  for (Staged& st : staged_) {
    if (!outputs && st.preload >= 0) {
      dnnl_exec_arg_t preload_args[2] = {{DNNL_ARG_FROM, st.preload_user.get()}, {DNNL_ARG_TO, st.staged.get()}};
      if (dnnl_primitive_execute(st.preload_reorder.get(), ctx_->stream.get(), 2, preload_args) != dnnl_success)
        fail_internal(where_ + ": a oneDNN reorder failed");
    }
    if (st.output != outputs) continue;
    dnnl_exec_arg_t reorder_args[2] = {{DNNL_ARG_FROM, st.output ? st.staged.get() : st.user.get()},
                                       {DNNL_ARG_TO, st.output ? st.user.get() : st.staged.get()}};
    if (dnnl_primitive_execute(st.reorder.get(), ctx_->stream.get(), 2, reorder_args) != dnnl_success)
      fail_internal(where_ + ": a oneDNN reorder failed");
  }
}

bool PrimitiveKernel::reads_at_run_time(size_t input) const {
  for (const Slot& s : slots_)
    if (!s.output && s.index == input) return true;
  for (const Staged& st : staged_)
    if (!st.output && st.index == input) return true;
  return false;  // a constant reordered at load, or an input the primitive does not take
}

bool PrimitiveKernel::may_overwrite_input(size_t input) const {
  return std::find(in_place_.begin(), in_place_.end(), input) != in_place_.end();
}

void PrimitiveKernel::bind_memory(int arg, dnnl::memory m) {
  exec_args_.push_back({arg, m.get()});
  owned_.push_back(std::move(m));
}

void PrimitiveKernel::run(const KernelArgs& args) {
  for (Slot& s : slots_) {
    std::span<const TensorView> views = s.output ? std::span<const TensorView>(args.outputs) : args.inputs;
    if (s.index >= views.size()) fail_internal(where_ + ": the executor passed too few tensors");
    const TensorView& v = views[s.index];
    if (v.byte_size() != s.bytes || (s.output && v.capacity < s.bytes))
      fail(where_ + ": the run-time shape of " + (s.output ? "output " : "input ") + std::to_string(s.index) +
           " differs from its compile-time shape");
    if (!v.data && s.bytes > 0) fail_internal(where_ + ": a tensor has no buffer");
    if (dnnl_memory_set_data_handle_v2(s.mem.get(), v.data, nullptr) != dnnl_success)
      fail_internal(where_ + ": could not set a oneDNN data handle");
  }
  if (scratchpad_bytes_ > 0) {
    if (!args.scratchpad) fail_internal(where_ + ": no scratchpad was given");
    if (dnnl_memory_set_data_handle_v2(scratchpad_.get(), args.scratchpad, nullptr) != dnnl_success)
      fail_internal(where_ + ": could not set the scratchpad handle");
  }
  point_staged(args);
  reorder_staged(false);
  before_execute(args);
  dnnl_status_t st = dnnl_primitive_execute(primitive_.get(), ctx_->stream.get(), static_cast<int>(exec_args_.size()),
                                            exec_args_.data());
  if (st == dnnl_success) st = dnnl_stream_wait(ctx_->stream.get());
  if (st != dnnl_success) fail_internal(where_ + ": oneDNN execution failed (status " + std::to_string(st) + ")");
  reorder_staged(true);
  after_execute(args);
}

}  // namespace memplan::rt::dnnl_kernels
