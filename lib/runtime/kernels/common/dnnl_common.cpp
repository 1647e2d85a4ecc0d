#include "runtime/kernels/common/dnnl_common.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "ir/dtype.h"
#include "ir/fused_activation.h"
#include "runtime/kernels/common/elementwise_common.h"

namespace memplan::rt::dnnl_kernels {

void require_float32_static(const Node& node, const KernelEnv& env) { require_static(node, env, {DType::Float32}); }

void require_static(const Node& node, const KernelEnv& env, std::initializer_list<DType> types) {
  auto check = [&](const Value* v, const char* role) {
    if (!v) return;
    if (std::find(types.begin(), types.end(), v->type.dtype) == types.end()) {
      std::string allowed;
      for (DType t : types) allowed += (allowed.empty() ? "" : ", ") + dtype_name(t);
      fail_unsupported(where(node, env) + ": " + dtype_name(v->type.dtype) + " is not supported, only " + allowed +
                       " (" + role + " '" + v->name + "')");
    }
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

dnnl::memory::desc plain_md(const Dims& dims) { return layout_md(dims, dnnl::memory::data_type::f32, 0); }

dnnl::memory::desc strided_md(const Dims& dims, const Dims& strides) {
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, strides);
}

dnnl::memory::desc layout_md(const Dims& dims, dnnl::memory::data_type type, int layout) {
  using tag = dnnl::memory::format_tag;
  if (layout == 0) {
    Dims strides(dims.size(), 1);
    for (size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * std::max<int64_t>(dims[i], 1);
    return dnnl::memory::desc(dims, type, strides);
  }
  if (dims.size() == 4 && layout == Value::kChannelsLast) return dnnl::memory::desc(dims, type, tag::nhwc);
  if (dims.size() != 4 || (layout != 8 && layout != 16) || dims[1] % layout != 0)
    fail_internal("a layout of channel block " + std::to_string(layout) + " does not fit " + dims_string(dims));
  return dnnl::memory::desc(dims, type, layout == 16 ? tag::nChw16c : tag::nChw8c);
}

dnnl::memory::desc blocked_md(const Dims& dims, int block) {
  if (block == Value::kChannelsLast) fail_internal("a float32 tensor " + dims_string(dims) + " is never channels-last");
  return layout_md(dims, dnnl::memory::data_type::f32, block);
}

dnnl::memory::desc activation_md(const Value* v) {
  return layout_md(dims_of(v), elt::dnnl_type(v->type.dtype), v->channel_block);
}

dnnl::memory::desc pooled_md(const Dims& y, const Value* y_value, const Value* x_value) {
  const dnnl::memory::data_type type = elt::dnnl_type(y_value->type.dtype);
  if (y_value->channel_block) return layout_md(y, type, y_value->channel_block);
  const bool one_pixel = y.size() == 4 && y[2] == 1 && y[3] == 1;
  return layout_md(y, type, one_pixel ? x_value->channel_block : 0);
}

dnnl::memory::desc any_md(const Dims& dims) {
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, dnnl::memory::format_tag::any);
}

namespace {

// A float32 constant with data whose element count its type agrees with.
void check_constant(const Value* v, const std::string& where) {
  if (!v || !v->constant) fail_internal(where + ": a constant input has no data");
  const Tensor& t = *v->constant;
  if (t.dtype != DType::Float32)
    fail_unsupported(where + ": constant '" + v->name + "' is " + dtype_name(t.dtype) + ", only float32 is supported");
  if (static_cast<int64_t>(t.element_count()) != product(dims_of(v)))
    fail_internal(where + ": constant '" + v->name + "' has " + std::to_string(t.element_count()) +
                  " elements, its type says " + v->type.shape_string());
}

std::vector<std::byte> constant_bytes(const Value* v, const std::string& where) {
  check_constant(v, where);
  return v->constant->materialize();
}

std::vector<float> floats_from(const std::vector<std::byte>& bytes) {
  std::vector<float> out(bytes.size() / sizeof(float));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
  return out;
}

}  // namespace

std::vector<float> constant_floats(const Value* v, const std::string& where) {
  return floats_from(constant_bytes(v, where));
}

std::vector<float> tensor_floats(const Tensor& t, const std::string& what) {
  if (t.dtype != DType::Float32) fail_unsupported(what + " is " + dtype_name(t.dtype) + ", only float32 is supported");
  return floats_from(t.materialize());
}

std::vector<float> channel_slice(const std::vector<float>& w, int64_t rows, int64_t channels, int64_t inner,
                                 int64_t first, int64_t count) {
  if (first < 0 || count < 0 || first + count > channels || static_cast<int64_t>(w.size()) != rows * channels * inner)
    fail_internal("a channel slice lies outside its tensor");
  std::vector<float> out(static_cast<size_t>(rows * count * inner));
  for (int64_t r = 0; r < rows; ++r)
    std::copy_n(w.begin() + (r * channels + first) * inner, count * inner, out.begin() + r * count * inner);
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

namespace {

dnnl::memory reorder_constant(const Value* v, const dnnl::memory::desc& user, const dnnl::memory::desc& want,
                              DnnlContext& ctx, const std::string& where) {
  const std::string what = where + ": constant '" + v->name + "'";
  // Straight from the tensor's own bytes: a materialized copy beside them and the reordered one
  // held the largest weight three times over while its kernel was made (vgg19's 392 MiB fully
  // connected layer). Only a splat is expanded first.
  if (v && v->constant && !v->constant->splat) {
    check_constant(v, where);
    return reordered_memory(v->constant->bytes.data(), v->constant->bytes.size(), user, want, ctx, what);
  }
  std::vector<std::byte> bytes = constant_bytes(v, where);
  return reordered_memory(bytes.data(), bytes.size(), user, want, ctx, what);
}

}  // namespace

dnnl::memory constant_memory(const Value* v, const dnnl::memory::desc& user, const dnnl::memory::desc& want,
                             DnnlContext& ctx, const std::string& where) {
  if (!ctx.share_constants || !v || !v->constant) return reorder_constant(v, user, want, ctx, where);
  for (const ReorderedConstant& r : ctx.reordered_constants)
    if (r.tensor.lock() == v->constant && r.user == user && r.want == want) return r.memory;
  dnnl::memory m = reorder_constant(v, user, want, ctx, where);
  ctx.reordered_constants.push_back({v->constant, user, want, m});
  return m;
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

// The kernel made again for fewer threads: oneDNN's primitives (its reorders too) run the thread
// count they were made for, whatever the caller's setting.
struct PrimitiveKernel::Form {
  dnnl::primitive primitive;
  std::vector<dnnl::primitive> reorders, preloads;  // per staged_ (preloads: empty where none)
};

// One session's memory objects, made with null handles, and the argument array naming them (and
// the kernel's shared constants). Built when the session is made and passed to the C API:
// dnnl::primitive::execute would build this vector (a heap allocation) on every call.
struct PrimitiveKernel::State final : KernelState {
  std::vector<dnnl::memory> slots;  // per slots_
  struct StagedMems {
    dnnl::memory user, staged, preload_user;
    dnnl::memory seen;  // the primitive's argument: `staged` itself, or its bytes in Staged::seen's shape
  };
  std::vector<StagedMems> staged;  // per staged_
  dnnl::memory scratchpad;
  std::optional<Form> own;  // for this session's threads, where fewer than the kernel's
  // For one thread, for the runs a session of several makes on one while other processes hold
  // the cores (run_threads.h); none when oneDNN has no primitive with these layouts.
  std::optional<Form> single;
  std::vector<dnnl_exec_arg_t> exec_args;
};

PrimitiveKernel::Form PrimitiveKernel::form_for_current_threads() const {
  Form f;
  f.primitive = primitive_for_current_threads();
  for (const Staged& st : staged_) {
    f.reorders.push_back(st.output ? dnnl::reorder(dnnl::reorder::primitive_desc(ctx_->engine, st.want, ctx_->engine, st.user))
                                   : dnnl::reorder(dnnl::reorder::primitive_desc(ctx_->engine, st.user, ctx_->engine, st.want)));
    f.preloads.push_back(st.preload >= 0 ? dnnl::reorder(dnnl::reorder::primitive_desc(ctx_->engine, st.user, ctx_->engine, st.want))
                                         : dnnl::primitive());
  }
  return f;
}

PrimitiveKernel::PrimitiveKernel(const Node& node, const KernelEnv& env)
    : ctx_(env.dnnl), where_(rt::where(node, env)) {
  if (!ctx_) fail_internal(where_ + ": no oneDNN context");
}

void PrimitiveKernel::set_primitive(const dnnl::primitive_desc& pd) {
  primitive_ = dnnl::primitive(pd);
  threads_ = omp_get_max_threads();
  scratchpad_md_ = pd.scratchpad_desc();
  scratchpad_bytes_ = scratchpad_md_.get_size();
  if (scratchpad_bytes_ > 0) args_.push_back({Arg::From::Scratchpad, DNNL_ARG_SCRATCHPAD, 0});
}

std::string PrimitiveKernel::implementation() const {
  const char* impl = nullptr;
  if (!pd() || dnnl_primitive_desc_query(pd(), dnnl_query_impl_info_str, 0, &impl) != dnnl_success || !impl)
    impl = "none";
  std::string out = impl;
  for (const Staged& st : staged_) out += std::string(st.output ? ", output" : ", input") + " reorder " + st.reorder_impl;
  return out;
}

bool PrimitiveKernel::reorders_both_ways() const {
  const auto staged = [&](bool output) {
    return std::any_of(staged_.begin(), staged_.end(), [&](const Staged& st) { return st.output == output; });
  };
  return staged(false) && staged(true);
}

void PrimitiveKernel::bind_input(int arg, size_t input_index, const dnnl::memory::desc& md) {
  args_.push_back({Arg::From::Slot, arg, slots_.size()});
  slots_.push_back({md, false, input_index, md.get_size()});
}

void PrimitiveKernel::bind_output(int arg, size_t output_index, const dnnl::memory::desc& md) {
  args_.push_back({Arg::From::Slot, arg, slots_.size()});
  slots_.push_back({md, true, output_index, md.get_size()});
}

PrimitiveKernel::Staged& PrimitiveKernel::bind_staged(int arg, bool output, size_t index, const dnnl::memory::desc& user,
                                                      const dnnl::memory::desc& want, int preload_input,
                                                      const dnnl::memory::desc& seen) {
  if (!primitive_) fail_internal(where_ + ": staged tensors are bound after set_primitive");
  Staged st;
  st.user = user;
  st.want = want;
  st.seen = seen == dnnl::memory::desc() ? want : seen;
  if (st.seen.get_size() < want.get_size()) fail_internal(where_ + ": a staged tensor's view does not cover its bytes");
  const auto reorder_pd = output ? dnnl::reorder::primitive_desc(ctx_->engine, want, ctx_->engine, user)
                                 : dnnl::reorder::primitive_desc(ctx_->engine, user, ctx_->engine, want);
  st.reorder = dnnl::reorder(reorder_pd);
  st.reorder_impl = reorder_pd.impl_info_str();
  st.output = output;
  st.index = index;
  if (output && preload_input >= 0) {
    st.preload = preload_input;
    st.preload_reorder = dnnl::reorder(dnnl::reorder::primitive_desc(ctx_->engine, user, ctx_->engine, want));
  }
  st.user_bytes = user.get_size();
  // Staging buffers follow the primitive's own scratchpad, 64-byte aligned.
  st.offset = (scratchpad_bytes_ + staged_bytes_ + 63) / 64 * 64;
  staged_bytes_ = st.offset + st.seen.get_size() - scratchpad_bytes_;
  args_.push_back({Arg::From::Staged, arg, staged_.size()});
  staged_.push_back(std::move(st));
  return staged_.back();
}

void PrimitiveKernel::bind_input_staged(int arg, size_t input_index, const dnnl::memory::desc& user,
                                        const dnnl::memory::desc& want, const dnnl::memory::desc& seen) {
  if (user == want) return bind_input(arg, input_index, seen == dnnl::memory::desc() ? user : seen);
  bind_staged(arg, false, input_index, user, want, -1, seen);
}

void PrimitiveKernel::bind_input_padded(int arg, size_t input_index, const dnnl::memory::desc& user,
                                        const dnnl::memory::desc& padded, const Dims& offsets) {
  Staged& st = bind_staged(arg, false, input_index, user, padded.submemory_desc(user.dims(), offsets), -1, padded);
  st.zero_first = true;
}

void PrimitiveKernel::bind_output_staged(int arg, size_t output_index, const dnnl::memory::desc& user,
                                         const dnnl::memory::desc& want, int preload_input,
                                         const dnnl::memory::desc& seen) {
  if (user == want) return bind_output(arg, output_index, seen == dnnl::memory::desc() ? user : seen);
  bind_staged(arg, true, output_index, user, want, preload_input, seen);
}

void PrimitiveKernel::bind_input_shifted(int arg, size_t input_index, const dnnl::memory::desc& user,
                                         const dnnl::memory::desc& want, int32_t zp, int zp_input) {
  if (want.data_type() != dnnl::memory::data_type::f32 || user == want)
    fail_internal(where_ + ": a shifted input is staged as float32");
  Staged& st = bind_staged(arg, false, input_index, user, want, -1, {});
  st.shifted = true;
  st.zp = zp;
  st.zp_input = zp_input;
}

void PrimitiveKernel::bind_memory(int arg, dnnl::memory m) {
  args_.push_back({Arg::From::Owned, arg, owned_.size()});
  owned_.push_back(std::move(m));
}

dnnl::primitive PrimitiveKernel::primitive_for_current_threads() const {
  const int threads = omp_get_max_threads();
  const_dnnl_op_desc_t op = nullptr;
  const_dnnl_primitive_attr_t attr = nullptr;
  if (dnnl_primitive_desc_query(pd(), dnnl_query_op_d, 0, &op) != dnnl_success ||
      dnnl_primitive_desc_get_attr(pd(), &attr) != dnnl_success)
    fail_internal(where_ + ": cannot read the oneDNN primitive's description");
  dnnl_primitive_desc_iterator_t it = nullptr;
  if (dnnl_primitive_desc_iterator_create(&it, op, attr, ctx_->engine.get(), nullptr) != dnnl_success)
    fail_internal(where_ + ": oneDNN cannot make this primitive again");
  // The same layouts for every argument the kernel binds: the weights were reordered once, and
  // the planner placed the staging buffers and sized the scratchpad for these.
  auto same_layouts = [&](const_dnnl_primitive_desc_t cand) {
    for (const Arg& a : args_) {
      if (a.from == Arg::From::Scratchpad) continue;
      const dnnl_memory_desc_t* want = dnnl_primitive_desc_query_md(pd(), dnnl_query_exec_arg_md, a.arg);
      const dnnl_memory_desc_t* got = dnnl_primitive_desc_query_md(cand, dnnl_query_exec_arg_md, a.arg);
      if (!want || !got || !dnnl_memory_desc_equal(want, got)) return false;
    }
    const dnnl_memory_desc_t* sp = dnnl_primitive_desc_query_md(cand, dnnl_query_scratchpad_md, 0);
    return (sp ? dnnl_memory_desc_get_size(sp) : 0) <= scratchpad_bytes_;
  };
  dnnl::primitive out;
  do {
    dnnl_primitive_desc_t cand = dnnl_primitive_desc_iterator_fetch(it);
    if (cand && same_layouts(cand)) out = dnnl::primitive(cand);
    if (cand) dnnl_primitive_desc_destroy(cand);
  } while (!out && dnnl_primitive_desc_iterator_next(it) == dnnl_success);
  dnnl_primitive_desc_iterator_destroy(it);
  if (!out)
    fail_unsupported(where_ + ": oneDNN has no " + std::to_string(threads) + "-thread form of this kernel with the layouts "
                     "it was made with for " + std::to_string(threads_) + " threads; compile the model for " +
                     std::to_string(threads) + " threads (CompileOptions::threads)");
  return out;
}

std::unique_ptr<KernelState> PrimitiveKernel::make_state() const {
  auto s = std::make_unique<State>();
  // A session of fewer threads than the primitive was made for: many oneDNN primitives would
  // still run their made-for count whatever the caller's setting.
  const int threads = omp_get_max_threads();
  if (threads < threads_) s->own = form_for_current_threads();
  if (threads > 1 && threads_ > 1) {
    omp_set_num_threads(1);
    try {
      s->single = form_for_current_threads();
    } catch (const Error&) {
      // None with these layouts: those runs use the session's primitive.
    }
    omp_set_num_threads(threads);
  }
  for (const Slot& slot : slots_) s->slots.emplace_back(slot.md, ctx_->engine, nullptr);
  for (const Staged& st : staged_) {
    dnnl::memory staged(st.want, ctx_->engine, nullptr);
    dnnl::memory seen = st.seen == st.want ? staged : dnnl::memory(st.seen, ctx_->engine, nullptr);
    s->staged.push_back({dnnl::memory(st.user, ctx_->engine, nullptr), staged,
                         st.preload >= 0 ? dnnl::memory(st.user, ctx_->engine, nullptr) : dnnl::memory(), seen});
  }
  if (scratchpad_bytes_ > 0) s->scratchpad = dnnl::memory(scratchpad_md_, ctx_->engine, nullptr);
  for (const Arg& a : args_) {
    // The shared constants are only read by the primitive: every session may name them.
    dnnl_memory_t m = a.from == Arg::From::Slot     ? s->slots[a.index].get()
                      : a.from == Arg::From::Staged ? s->staged[a.index].seen.get()
                      : a.from == Arg::From::Owned  ? owned_[a.index].get()
                                                    : s->scratchpad.get();
    s->exec_args.push_back({a.arg, m});
  }
  return s;
}

void PrimitiveKernel::point_slots(State& s, const KernelArgs& args) const {
  for (size_t i = 0; i < slots_.size(); ++i) {
    const Slot& slot = slots_[i];
    std::span<const TensorView> views = slot.output ? std::span<const TensorView>(args.outputs) : args.inputs;
    if (slot.index >= views.size()) fail_internal(where_ + ": the executor passed too few tensors");
    const TensorView& v = views[slot.index];
    if (v.byte_size() != slot.bytes || (slot.output && v.capacity < slot.bytes))
      fail(where_ + ": the run-time shape of " + (slot.output ? "output " : "input ") + std::to_string(slot.index) +
           " differs from its compile-time shape");
    if (!v.data && slot.bytes > 0) fail_internal(where_ + ": a tensor has no buffer");
    if (dnnl_memory_set_data_handle_v2(s.slots[i].get(), v.data, nullptr) != dnnl_success)
      fail_internal(where_ + ": could not set a oneDNN data handle");
  }
  if (scratchpad_bytes_ > 0) {
    if (!args.scratchpad) fail_internal(where_ + ": no scratchpad was given");
    if (dnnl_memory_set_data_handle_v2(s.scratchpad.get(), args.scratchpad, nullptr) != dnnl_success)
      fail_internal(where_ + ": could not set the scratchpad handle");
  }
}

void PrimitiveKernel::point_staged(State& s, const KernelArgs& args) const {
  for (size_t i = 0; i < staged_.size(); ++i) {
    const Staged& st = staged_[i];
    State::StagedMems& mems = s.staged[i];
    std::span<const TensorView> views = st.output ? std::span<const TensorView>(args.outputs) : args.inputs;
    if (st.index >= views.size()) fail_internal(where_ + ": the executor passed too few tensors");
    const TensorView& v = views[st.index];
    if (v.byte_size() != st.user_bytes || (st.output && v.capacity < st.user_bytes))
      fail(where_ + ": the run-time shape of " + (st.output ? "output " : "input ") + std::to_string(st.index) +
           " differs from its compile-time shape");
    if (!args.scratchpad) fail_internal(where_ + ": no scratchpad was given");
    dnnl_memory_set_data_handle_v2(mems.user.get(), v.data, nullptr);
    dnnl_memory_set_data_handle_v2(mems.staged.get(), args.scratchpad + st.offset, nullptr);
    if (mems.seen.get() != mems.staged.get())
      dnnl_memory_set_data_handle_v2(mems.seen.get(), args.scratchpad + st.offset, nullptr);
    if (st.preload >= 0) {
      const auto p = static_cast<size_t>(st.preload);
      if (p >= args.inputs.size() || args.inputs[p].byte_size() != st.user_bytes)
        fail(where_ + ": input " + std::to_string(p) + " does not have the output's shape");
      dnnl_memory_set_data_handle_v2(mems.preload_user.get(), args.inputs[p].data, nullptr);
    }
  }
}

void PrimitiveKernel::reorder_staged(State& s, const Form* form, dnnl_stream* stream, bool outputs,
                                     const KernelArgs& args) const {
  for (size_t i = 0; i < staged_.size(); ++i) {
    const Staged& st = staged_[i];
    State::StagedMems& mems = s.staged[i];
    if (!outputs && st.preload >= 0) {
      dnnl_exec_arg_t preload_args[2] = {{DNNL_ARG_FROM, mems.preload_user.get()}, {DNNL_ARG_TO, mems.staged.get()}};
      const dnnl_primitive_t preload = form ? form->preloads[i].get() : st.preload_reorder.get();
      if (dnnl_primitive_execute(preload, stream, 2, preload_args) != dnnl_success)
        fail_internal(where_ + ": a oneDNN reorder failed");
    }
    if (st.output != outputs) continue;
    if (st.zero_first) std::memset(args.scratchpad + st.offset, 0, st.seen.get_size());
    dnnl_exec_arg_t reorder_args[2] = {{DNNL_ARG_FROM, st.output ? mems.staged.get() : mems.user.get()},
                                       {DNNL_ARG_TO, st.output ? mems.user.get() : mems.staged.get()}};
    const dnnl_primitive_t reorder = form ? form->reorders[i].get() : st.reorder.get();
    if (dnnl_primitive_execute(reorder, stream, 2, reorder_args) != dnnl_success)
      fail_internal(where_ + ": a oneDNN reorder failed");
    if (st.shifted) {
      if (dnnl_stream_wait(stream) != dnnl_success) fail_internal(where_ + ": a oneDNN reorder failed");
      shift_staged(st, args);
    }
  }
}

// Every float of the staged buffer, padding included: padded channels meet zero weights, and the
// convolution's spatial padding reads as zero, i.e. as the zero point, as ONNX wants.
void PrimitiveKernel::shift_staged(const Staged& st, const KernelArgs& args) const {
  int32_t zp = st.zp;
  if (st.zp_input >= 0) {
    const auto i = static_cast<size_t>(st.zp_input);
    const TensorView* z = i < args.inputs.size() ? &args.inputs[i] : nullptr;
    if (!z || !z->data || z->element_count() != 1 || (z->dtype != DType::Uint8 && z->dtype != DType::Int8))
      fail(where_ + ": the zero point must be one uint8 or int8 value");
    zp = z->dtype == DType::Uint8 ? *z->as<const uint8_t>() : *z->as<const int8_t>();
  }
  if (zp == 0) return;
  const float shift = static_cast<float>(zp);
  float* data = reinterpret_cast<float*>(args.scratchpad + st.offset);
  const size_t count = st.want.get_size() / sizeof(float);
  for (size_t k = 0; k < count; ++k) data[k] -= shift;
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

void PrimitiveKernel::run(const KernelArgs& args) {
  auto* s = dynamic_cast<State*>(args.state);
  if (!s) fail_internal(where_ + ": run without the session's kernel state");
  dnnl_stream* stream = args.stream ? args.stream : ctx_->stream.get();
  // The primitive and reorders made for the thread count of this run (Session sets it; oneDNN
  // would otherwise run the count each was made for).
  const int threads = omp_get_max_threads();
  const Form* form = nullptr;
  if (threads < threads_) form = threads == 1 && s->single ? &*s->single : s->own ? &*s->own : nullptr;
  point_slots(*s, args);
  point_staged(*s, args);
  reorder_staged(*s, form, stream, false, args);
  before_execute(args);
  const dnnl_primitive_t prim = form ? form->primitive.get() : primitive_.get();
  dnnl_status_t st = dnnl_primitive_execute(prim, stream, static_cast<int>(s->exec_args.size()), s->exec_args.data());
  if (st == dnnl_success) st = dnnl_stream_wait(stream);
  if (st != dnnl_success) fail_internal(where_ + ": oneDNN execution failed (status " + std::to_string(st) + ")");
  if (!args.outputs.empty()) {
    auto* written = reinterpret_cast<float*>(args.outputs[0].data);
    uint64_t bytes = args.outputs[0].byte_size();
    for (const Staged& staged : staged_)
      if (staged.output && staged.index == 0) {
        written = reinterpret_cast<float*>(args.scratchpad + staged.offset);
        bytes = staged.want.get_size();
      }
    after_primitive(args, written, bytes);
  }
  reorder_staged(*s, form, stream, true, args);
  after_execute(args);
}

// The fused activation (ir/fused_activation.h) as eltwise post-ops, one per step.
void append_activation(dnnl::post_ops& po, const Node& node, const std::string& where) {
  const std::optional<std::vector<EltwiseStep>> steps = fused_steps(node);
  if (!steps)
    fail(where + ": the fused activation (" + kFusedActivationAttr + " " +
         std::to_string(node.attr_int(kFusedActivationAttr, 0)) + ", with its '" + kFusedClipAttr + "' or '" +
         kFusedEltwiseAttr + "') is not valid");
  using K = EltwiseStep::Kind;
  using A = dnnl::algorithm;
  for (const EltwiseStep& st : *steps) {
    switch (st.kind) {
      case K::Linear: po.append_eltwise(1.f, A::eltwise_linear, st.alpha, st.beta); break;
      case K::Clip: po.append_eltwise(1.f, A::eltwise_clip, st.alpha, st.beta); break;
      case K::Relu: po.append_eltwise(1.f, A::eltwise_relu, st.alpha, 0.f); break;
      case K::HardSwish: po.append_eltwise(1.f, A::eltwise_hardswish, 0.f, 0.f); break;
      case K::Logistic: po.append_eltwise(1.f, A::eltwise_logistic, 0.f, 0.f); break;
      case K::Swish: po.append_eltwise(1.f, A::eltwise_swish, st.alpha, 0.f); break;
      case K::GeluErf: po.append_eltwise(1.f, A::eltwise_gelu_erf, 0.f, 0.f); break;
      case K::GeluTanh: po.append_eltwise(1.f, A::eltwise_gelu_tanh, 0.f, 0.f); break;
    }
  }
}

}  // namespace memplan::rt::dnnl_kernels
