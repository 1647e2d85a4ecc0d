#include "runtime/kernels/common/shape_common.h"

#include <algorithm>

#include "runtime/kernels/common/parallel_chunks.h"

namespace memplan::rt::shape {

void fail_at(const std::string& where, const std::string& what) { fail(where + ": " + what); }
void unsupported_at(const std::string& where, const std::string& what) { fail_unsupported(where + ": " + what); }

const Value* required_input(const Node& n, size_t i, const std::string& where) {
  const Value* v = input_at(n, i);
  if (!v) fail_at(where, "input " + std::to_string(i) + " is missing");
  return v;
}

const Value* required_output(const Node& n, size_t i, const std::string& where) {
  const Value* v = output_at(n, i);
  if (!v) fail_at(where, "output " + std::to_string(i) + " is missing");
  return v;
}

void check_indices_type(const Value* v, const std::string& where) {
  if (v->type.dtype != DType::Int64 && v->type.dtype != DType::Int32)
    fail_at(where, "indices must be int64 or int32, not " + dtype_name(v->type.dtype));
}

void index_out_of_range(const std::string& where, int64_t idx, int axis, int64_t extent) {
  fail_at(where, "index " + std::to_string(idx) + " is out of range for axis " + std::to_string(axis) + " of size " +
                     std::to_string(extent));
}

bool shape_is_dynamic(const Value* v) { return v && (v->shape_varies || !v->type.is_static()); }

bool any_dynamic(const Node& n) {
  for (const Value* v : n.inputs)
    if (shape_is_dynamic(v)) return true;
  for (const Value* v : n.outputs)
    if (shape_is_dynamic(v)) return true;
  return false;
}

void check_rank(int rank, const std::string& where) {
  if (rank > kMaxRank)
    unsupported_at(where, "rank " + std::to_string(rank) + " exceeds the supported maximum of " + std::to_string(kMaxRank));
}

TensorView static_view(const Value* v, const std::string& where) {
  TensorView t;
  if (!v) return t;
  t.dtype = v->type.dtype;
  const int rank = static_cast<int>(v->type.dims.size());
  check_rank(rank, where);
  t.rank = rank;
  for (int i = 0; i < rank; ++i) t.dims[i] = v->type.dims[static_cast<size_t>(i)].value;
  t.capacity = v->capacity_bytes;
  return t;
}

int normalize_axis(int64_t axis, int rank, const std::string& where) {
  if (axis < -rank || axis >= rank)
    fail_at(where, "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

namespace {
void check_list_size(uint64_t n, const std::string& where, const char* what) {
  if (n > static_cast<uint64_t>(kMaxLoopRank))
    unsupported_at(where, std::string(what) + " has " + std::to_string(n) + " elements, more than " +
                              std::to_string(kMaxLoopRank) + " are not supported");
}
}  // namespace

Ints ints_of_view(const TensorView& t, const std::string& where, const char* what) {
  if (t.dtype != DType::Int64 && t.dtype != DType::Int32)
    fail_at(where, std::string(what) + " must be int64 or int32, not " + dtype_name(t.dtype));
  if (t.rank > 1) fail_at(where, std::string(what) + " must be a scalar or 1-D tensor");
  const uint64_t n = t.element_count();
  check_list_size(n, where, what);
  Ints r;
  r.size = static_cast<int>(n);
  for (uint64_t i = 0; i < n; ++i) r.v[i] = int_at(t, i);
  return r;
}

Ints ints_of_tensor(const Tensor& t, const std::string& where, const char* what) {
  if (t.dtype != DType::Int64 && t.dtype != DType::Int32)
    fail_at(where, std::string(what) + " must be int64 or int32, not " + dtype_name(t.dtype));
  if (t.dims.size() > 1) fail_at(where, std::string(what) + " must be a scalar or 1-D tensor");
  const uint64_t n = t.element_count();
  check_list_size(n, where, what);
  Ints r;
  r.size = static_cast<int>(n);
  for (uint64_t i = 0; i < n; ++i) r.v[i] = t.int_at(i);
  return r;
}

Ints ints_of_list(const std::vector<int64_t>& v, const std::string& where, const char* what) {
  check_list_size(v.size(), where, what);
  Ints r;
  r.size = static_cast<int>(v.size());
  std::copy(v.begin(), v.end(), r.v.begin());
  return r;
}

IntsSource IntsSource::from_attr(const Node& n, const std::string& name, const std::string& where) {
  IntsSource s;
  const Attribute* a = n.attr(name);
  if (!a) return s;
  s.present_ = true;
  s.fixed_ = true;
  s.value_ = ints_of_list(a->kind == Attribute::Kind::Int ? std::vector<int64_t>{a->i} : a->ints, where, name.c_str());
  return s;
}

IntsSource IntsSource::from_input(const Node& n, size_t i, const std::string& where, const char* what) {
  IntsSource s;
  const Value* v = input_at(n, i);
  s.what_ = what;
  s.input_ = i;
  if (!v) return s;
  s.present_ = true;
  if (v->constant) {
    s.fixed_ = true;
    s.value_ = ints_of_tensor(*v->constant, where, what);
  } else if (v->type.dtype != DType::Int64 && v->type.dtype != DType::Int32) {
    fail_at(where, std::string(what) + " must be int64 or int32, not " + dtype_name(v->type.dtype));
  }
  return s;
}

const Ints* IntsSource::get(const KernelArgs& args, Ints& scratch, const std::string& where) const {
  if (!present_) return nullptr;
  if (fixed_) return &value_;
  if (input_ >= args.inputs.size() || !args.inputs[input_].data) return nullptr;
  scratch = ints_of_view(args.inputs[input_], where, what_);
  return &scratch;
}

void check_fits(uint64_t bytes, const TensorView& out, const std::string& where) {
  if (bytes > out.capacity)
    fail_at(where, "output needs " + std::to_string(bytes) + " bytes but its buffer holds " + std::to_string(out.capacity) +
                       "; raise its bound");
}

void set_shape(TensorView& out, int rank, const int64_t* dims, const std::string& where) {
  check_rank(rank, where);
  uint64_t bytes = dtype_size(out.dtype);
  for (int i = 0; i < rank; ++i) {
    if (dims[i] < 0) fail_at(where, "output dimension " + std::to_string(dims[i]) + " is negative");
    if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(dims[i]), &bytes)) fail_at(where, "output size overflows 64 bits");
  }
  check_fits(bytes, out, where);
  out.rank = rank;
  for (int i = 0; i < rank; ++i) out.dims[i] = dims[i];
}

std::array<int64_t, kMaxRank> strides_of(int rank, const int64_t* dims) {
  std::array<int64_t, kMaxRank> s{};
  int64_t acc = 1;
  for (int i = rank; i-- > 0;) {
    s[i] = acc;
    acc *= dims[i];
  }
  return s;
}

uint32_t movable_size(DType t, const std::string& where) {
  const uint32_t size = dtype_size(t);
  if (size == 0 || size > 8 || t == DType::String)
    unsupported_at(where, "data type " + dtype_name(t) + " is not supported");
  return size;
}

void CopyPlan::finish() {
  count = 1;
  for (int i = 0; i < rank; ++i) count *= static_cast<uint64_t>(dims[i]);
  int r = 0;
  std::array<int64_t, kMaxLoopRank> d{}, s{};
  for (int i = 0; i < rank; ++i) {
    if (dims[i] == 1) continue;
    if (r > 0 && s[r - 1] == strides[i] * dims[i]) {  // the outer dim steps over exactly this one
      d[r - 1] *= dims[i];
      s[r - 1] = strides[i];
    } else {
      d[r] = dims[i];
      s[r] = strides[i];
      ++r;
    }
  }
  if (r == 0) {
    r = 1;
    d[0] = 1;
    s[0] = 1;
  }
  rank = r;
  dims = d;
  strides = s;
}

namespace {
template <size_t ES>
void copy_loop(std::byte* dst, const std::byte* src, const CopyPlan& p) {
  const int r = p.rank;
  const int64_t inner = p.dims[r - 1], step = p.strides[r - 1], es = static_cast<int64_t>(ES);
  std::array<int64_t, kMaxLoopRank> coord{};
  int64_t off = p.base;
  if (step == 1 && r >= 2 && inner * es < 32) {
    // Short rows (a box's coordinates): the row dim as a plain loop, not an index step per row.
    const int64_t rows = p.dims[r - 2], row_step = p.strides[r - 2];
    const auto bytes = static_cast<size_t>(inner) * ES;
    for (;;) {
      for (int64_t i = 0; i < rows; ++i, dst += bytes) copy_short(dst, src + (off + i * row_step) * es, bytes);
      if (!next_index(coord, p.dims, r - 2, [&](int d, int64_t by) { off += p.strides[d] * by; })) return;
    }
  }
  for (;;) {
    if (step == 1) {
      copy_run(dst, src + off * es, static_cast<size_t>(inner) * ES);
      dst += static_cast<size_t>(inner) * ES;
    } else {
      for (int64_t j = 0; j < inner; ++j, dst += ES) std::memcpy(dst, src + (off + j * step) * es, ES);
    }
    if (!next_index(coord, p.dims, r - 1, [&](int d, int64_t by) { off += p.strides[d] * by; })) return;
  }
}
}  // namespace

// A large copy goes to the run's threads in chunks of its outermost dim: the tensor it reads was
// written by all of them, and one thread reading the others' caches' halves ran at half its
// single-thread speed (ViT's 49 head Transposes: 1.3 ms at one thread, 2.4 at two).
void strided_copy(std::byte* dst, const std::byte* src, uint32_t elem_size, const CopyPlan& p) {
  if (p.count == 0) return;
  const auto outer = static_cast<uint64_t>(p.dims[0]);
  const uint64_t outer_bytes = p.count / outer * elem_size;  // bytes written per index of the outermost dim
  const bool split = p.count * elem_size >= 2 * kParallelChunkBytes && outer > 1;
  const bool sized = dispatch_size(elem_size, [&](auto es) {
    if (!split) return copy_loop<decltype(es)::value>(dst, src, p);
    parallel_chunks(outer, std::max<uint64_t>(kParallelChunkBytes / outer_bytes, 1), [&](uint64_t begin, uint64_t end) {
      CopyPlan part = p;
      part.dims[0] = static_cast<int64_t>(end - begin);
      part.base = p.base + static_cast<int64_t>(begin) * p.strides[0];
      part.count = (end - begin) * (p.count / outer);
      copy_loop<decltype(es)::value>(dst + begin * outer_bytes, src, part);
    });
  });
  if (!sized) fail_internal("strided copy of elements of " + std::to_string(elem_size) + " bytes");
}

Broadcast make_broadcast(const TensorView* const* in, int n, const std::string& where) {
  Broadcast b;
  int rank = 0;
  for (int k = 0; k < n; ++k) rank = std::max(rank, in[k]->rank);
  check_rank(rank, where);
  std::array<int, 3> ranks{};
  std::array<const int64_t*, 3> dims{};
  for (int k = 0; k < n; ++k) {
    ranks[k] = in[k]->rank;
    dims[k] = in[k]->dims.data();
  }
  if (!broadcast_dims(n, ranks.data(), dims.data(), b.out_rank, b.out_dims.data())) {
    std::string shapes;
    for (int m = 0; m < n; ++m) {
      shapes += m ? " and [" : "[";
      for (int q = 0; q < in[m]->rank; ++q) shapes += (q ? ", " : "") + std::to_string(in[m]->dims[q]);
      shapes += "]";
    }
    fail_at(where, "shapes " + shapes + " cannot be broadcast together");
  }
  // dim i of input k, aligned to the right; 1 where the input has fewer dims.
  auto dim = [&](int k, int i) { return i >= rank - in[k]->rank ? in[k]->dims[i - (rank - in[k]->rank)] : int64_t{1}; };
  b.count = product(b.out_dims.data(), 0, rank);
  // Per-input element strides over the output's dims (0 where the input broadcasts).
  std::array<std::array<int64_t, kMaxRank>, 3> st{};
  for (int k = 0; k < n; ++k) {
    int64_t acc = 1;
    for (int i = rank; i-- > 0;) {
      const int64_t d = dim(k, i);
      st[k][i] = d == 1 ? 0 : acc;
      acc *= d;
    }
  }
  // Loop dims: drop size 1, merge neighbours that every input walks contiguously.
  int r = 0;
  for (int i = 0; i < rank; ++i) {
    const int64_t d = b.out_dims[i];
    if (d == 1) continue;
    bool merge = r > 0;
    for (int k = 0; k < n && merge; ++k) merge = b.strides[k][r - 1] == st[k][i] * d;
    if (merge) {
      b.dims[r - 1] *= d;
    } else {
      b.dims[r] = d;
      ++r;
    }
    for (int k = 0; k < n; ++k) b.strides[k][r - 1] = st[k][i];
  }
  if (r == 0) {
    r = 1;
    b.dims[0] = 1;
  }
  b.rank = r;
  return b;
}

}  // namespace memplan::rt::shape
