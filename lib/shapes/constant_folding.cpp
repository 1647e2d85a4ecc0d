#include "shapes/constant_folding.h"

#include <cmath>
#include <cstring>
#include <functional>

#include "memplan/error.h"
#include "util/checked.h"

namespace memplan {
namespace {

// Folded results larger than this stay run-time computations.
constexpr uint64_t kMaxFoldedElements = 1 << 16;

bool is_float(DType t) { return t == DType::Float32 || t == DType::Float64; }

bool is_foldable_type(DType t) {
  switch (t) {
    case DType::Float32: case DType::Float64: case DType::Int64: case DType::Int32: case DType::Int16:
    case DType::Int8: case DType::Uint8: case DType::Uint16: case DType::Uint32: case DType::Uint64:
    case DType::Bool:
      return true;
    default:
      return false;
  }
}

Tensor make_tensor(DType dtype, std::vector<int64_t> dims) {
  Tensor t;
  t.dtype = dtype;
  t.dims = std::move(dims);
  t.bytes.resize(t.byte_size());
  return t;
}

void store(Tensor& t, uint64_t i, double v) { store_number(t.bytes.data() + i * dtype_size(t.dtype), t.dtype, v); }

void store_int(Tensor& t, uint64_t i, int64_t v) {
  if (t.dtype == DType::Int64) std::memcpy(t.bytes.data() + i * 8, &v, 8);
  else store(t, i, static_cast<double>(v));
}

int64_t normalize_axis(int64_t axis, int64_t rank, const Node& n) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1)) fail(n.describe() + ": axis " + std::to_string(axis) + " out of range");
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> strides_of(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

// Numpy broadcasting of a and b; returns the output dims or fails naming the node.
std::vector<int64_t> broadcast_dims(const std::vector<int64_t>& a, const std::vector<int64_t>& b, const Node& n) {
  size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i + a.size() >= rank ? a[i + a.size() - rank] : 1;
    int64_t db = i + b.size() >= rank ? b[i + b.size() - rank] : 1;
    if (da != db && da != 1 && db != 1) fail(n.describe() + ": shapes cannot be broadcast together");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// Index into `src` (dims) of the element at flat position `flat` of `out_dims` under broadcasting.
uint64_t broadcast_index(uint64_t flat, const std::vector<int64_t>& out_dims, const std::vector<int64_t>& src) {
  uint64_t idx = 0, stride = 1;
  for (size_t i = out_dims.size(); i-- > 0;) {
    int64_t coord = static_cast<int64_t>(flat % static_cast<uint64_t>(out_dims[i]));
    flat /= static_cast<uint64_t>(out_dims[i]);
    size_t offset = out_dims.size() - src.size();
    if (i >= offset) {
      int64_t d = src[i - offset];
      idx += static_cast<uint64_t>(d == 1 ? 0 : coord) * stride;
      stride *= static_cast<uint64_t>(d);
    }
  }
  return idx;
}

using BinaryFn = std::function<double(double, double)>;

std::optional<Tensor> binary(const Node& n, const Tensor& a, const Tensor& b) {
  const std::string& op = n.op_type;
  const bool compare = op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual" || op == "GreaterOrEqual";
  const bool logic = op == "And" || op == "Or" || op == "Xor";
  auto dims = broadcast_dims(a.dims, b.dims, n);
  if (checked_element_count(dims, n.describe()) > kMaxFoldedElements) return std::nullopt;
  Tensor out = make_tensor(compare || logic ? DType::Bool : a.dtype, dims);
  const bool integral = !is_float(a.dtype);
  for (uint64_t i = 0; i < out.element_count(); ++i) {
    uint64_t ia = broadcast_index(i, dims, a.dims), ib = broadcast_index(i, dims, b.dims);
    if (integral) {
      int64_t x = a.int_at(ia), y = b.int_at(ib), r = 0;
      if (op == "Add") r = static_cast<int64_t>(static_cast<uint64_t>(x) + static_cast<uint64_t>(y));
      else if (op == "Sub") r = static_cast<int64_t>(static_cast<uint64_t>(x) - static_cast<uint64_t>(y));
      else if (op == "Mul") r = static_cast<int64_t>(static_cast<uint64_t>(x) * static_cast<uint64_t>(y));
      else if (op == "Div") {
        if (y == 0 || (x == INT64_MIN && y == -1)) fail(n.describe() + ": integer division by zero or overflow in a constant");
        r = x / y;
      }
      else if (op == "Max") r = std::max(x, y);
      else if (op == "Min") r = std::min(x, y);
      else if (op == "Equal") r = x == y;
      else if (op == "Less") r = x < y;
      else if (op == "Greater") r = x > y;
      else if (op == "LessOrEqual") r = x <= y;
      else if (op == "GreaterOrEqual") r = x >= y;
      else if (op == "And") r = x && y;
      else if (op == "Or") r = x || y;
      else if (op == "Xor") r = (x != 0) != (y != 0);
      store_int(out, i, r);
    } else {
      double x = a.float_at(ia), y = b.float_at(ib), r = 0;
      if (op == "Add") r = x + y;
      else if (op == "Sub") r = x - y;
      else if (op == "Mul") r = x * y;
      else if (op == "Div") r = x / y;
      else if (op == "Max") r = std::max(x, y);
      else if (op == "Min") r = std::min(x, y);
      else if (op == "Equal") r = x == y;
      else if (op == "Less") r = x < y;
      else if (op == "Greater") r = x > y;
      else if (op == "LessOrEqual") r = x <= y;
      else if (op == "GreaterOrEqual") r = x >= y;
      else return std::nullopt;
      store(out, i, r);
    }
  }
  return out;
}

// Copies whole elements: the shape ops below are dtype-agnostic.
void copy_element(Tensor& dst, uint64_t di, const Tensor& src, uint64_t si) {
  const uint64_t size = dtype_size(src.dtype);
  std::memcpy(dst.bytes.data() + di * size, src.bytes.data() + (src.splat ? 0 : si * size), size);
}

Tensor with_dims(const Tensor& t, std::vector<int64_t> dims, const Node& n) {
  if (checked_element_count(dims, n.describe()) != t.element_count())
    fail(n.describe() + ": cannot reshape a constant of " + std::to_string(t.element_count()) + " elements");
  Tensor out = t;
  out.dims = std::move(dims);
  return out;
}

std::vector<int64_t> axes_of(const Node& n, const std::vector<const Tensor*>& in) {
  if (in.size() > 1 && in[1]) return in[1]->to_ints();
  return n.attr_ints("axes");
}

std::optional<Tensor> slice(const Node& n, const std::vector<const Tensor*>& in) {
  const Tensor& data = *in[0];
  std::vector<int64_t> starts, ends, axes, steps;
  if (n.opset < 10) {
    starts = n.attr_ints("starts");
    ends = n.attr_ints("ends");
    axes = n.attr_ints("axes");
  } else {
    if (in.size() < 3 || !in[1] || !in[2]) return std::nullopt;
    starts = in[1]->to_ints();
    ends = in[2]->to_ints();
    if (in.size() > 3 && in[3]) axes = in[3]->to_ints();
    if (in.size() > 4 && in[4]) steps = in[4]->to_ints();
  }
  const int64_t rank = static_cast<int64_t>(data.dims.size());
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    fail(n.describe() + ": starts, ends, axes and steps differ in length");
  std::vector<int64_t> begin(rank, 0), step(rank, 1), out_dims = data.dims;
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t ax = normalize_axis(axes[i], rank, n), dim = data.dims[ax], st = steps[i];
    if (st == 0) fail(n.describe() + ": slice step is 0");
    auto clampi = [&](int64_t v, int64_t lo, int64_t hi) {
      if (v < 0) v = v < -dim ? -1 : v + dim;  // INT64 sentinels stay in range
      return std::clamp(v, lo, hi);
    };
    int64_t b = st > 0 ? clampi(starts[i], 0, dim) : clampi(starts[i], -1, dim - 1);
    int64_t e = st > 0 ? clampi(ends[i], 0, dim) : clampi(ends[i], -1, dim - 1);
    int64_t count = st > 0 ? (e > b ? (e - b + st - 1) / st : 0) : (b > e ? (b - e - st - 1) / -st : 0);
    begin[ax] = b;
    step[ax] = st;
    out_dims[ax] = count;
  }
  if (checked_element_count(out_dims, n.describe()) > kMaxFoldedElements) return std::nullopt;
  Tensor out = make_tensor(data.dtype, out_dims);
  auto src_strides = strides_of(data.dims);
  for (uint64_t i = 0; i < out.element_count(); ++i) {
    uint64_t rest = i, src = 0;
    for (int64_t d = rank; d-- > 0;) {
      int64_t c = static_cast<int64_t>(rest % static_cast<uint64_t>(out_dims[d]));
      rest /= static_cast<uint64_t>(out_dims[d]);
      src += static_cast<uint64_t>((begin[d] + c * step[d]) * src_strides[d]);
    }
    copy_element(out, i, data, src);
  }
  return out;
}

std::optional<Tensor> gather(const Node& n, const Tensor& data, const Tensor& indices) {
  const int64_t rank = static_cast<int64_t>(data.dims.size());
  if (rank == 0) fail(n.describe() + ": Gather of a scalar");
  const int64_t axis = normalize_axis(n.attr_int("axis", 0), rank, n);
  std::vector<int64_t> dims(data.dims.begin(), data.dims.begin() + axis);
  dims.insert(dims.end(), indices.dims.begin(), indices.dims.end());
  dims.insert(dims.end(), data.dims.begin() + axis + 1, data.dims.end());
  if (checked_element_count(dims, n.describe()) > kMaxFoldedElements) return std::nullopt;
  Tensor out = make_tensor(data.dtype, dims);
  uint64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= static_cast<uint64_t>(data.dims[d]);
  for (int64_t d = axis + 1; d < rank; ++d) inner *= static_cast<uint64_t>(data.dims[d]);
  const int64_t extent = data.dims[axis];
  const uint64_t n_idx = indices.element_count();
  for (uint64_t o = 0; o < outer; ++o)
    for (uint64_t k = 0; k < n_idx; ++k) {
      int64_t idx = indices.int_at(k);
      if (idx < -extent || idx >= extent)
        fail(n.describe() + ": index " + std::to_string(idx) + " out of range for axis of size " + std::to_string(extent));
      if (idx < 0) idx += extent;
      for (uint64_t r = 0; r < inner; ++r)
        copy_element(out, (o * n_idx + k) * inner + r, data, (o * static_cast<uint64_t>(extent) + static_cast<uint64_t>(idx)) * inner + r);
    }
  return out;
}

std::optional<Tensor> concat(const Node& n, const std::vector<const Tensor*>& in) {
  const Tensor& first = *in[0];
  const int64_t rank = static_cast<int64_t>(first.dims.size());
  const int64_t axis = normalize_axis(n.attr_int("axis", 0), rank, n);
  std::vector<int64_t> dims = first.dims;
  dims[axis] = 0;
  for (const Tensor* t : in) {
    if (t->dims.size() != first.dims.size() || t->dtype != first.dtype) fail(n.describe() + ": inputs differ in rank or type");
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis && t->dims[d] != first.dims[d]) fail(n.describe() + ": inputs differ in shape");
    dims[axis] += t->dims[axis];
  }
  if (checked_element_count(dims, n.describe()) > kMaxFoldedElements) return std::nullopt;
  Tensor out = make_tensor(first.dtype, dims);
  uint64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= static_cast<uint64_t>(dims[d]);
  uint64_t at = 0;
  for (uint64_t o = 0; o < outer; ++o)
    for (const Tensor* t : in) {
      uint64_t chunk = t->element_count() / std::max<uint64_t>(outer, 1);
      for (uint64_t k = 0; k < chunk; ++k) copy_element(out, at++, *t, o * chunk + k);
    }
  return out;
}

std::optional<Tensor> range(const Node& n, const Tensor& start, const Tensor& limit, const Tensor& delta) {
  const double s = start.float_at(0), l = limit.float_at(0), d = delta.float_at(0);
  if (d == 0) fail(n.describe() + ": Range delta is 0");
  const double count = std::max(std::ceil((l - s) / d), 0.0);
  if (!(count <= static_cast<double>(kMaxFoldedElements))) return std::nullopt;
  Tensor out = make_tensor(start.dtype, {static_cast<int64_t>(count)});
  for (uint64_t i = 0; i < out.element_count(); ++i) {
    if (is_float(start.dtype)) store(out, i, s + static_cast<double>(i) * d);
    else store_int(out, i, start.int_at(0) + static_cast<int64_t>(i) * delta.int_at(0));
  }
  return out;
}

std::optional<Tensor> fold_single(const Node& n, const std::vector<const Tensor*>& in) {
  const std::string& op = n.op_type;
  auto need = [&](size_t k) { return in.size() >= k && std::all_of(in.begin(), in.begin() + k, [](auto* t) { return t; }); };
  if (op == "Identity" && need(1)) return *in[0];
  if (op == "Cast" && need(1)) {
    auto to = static_cast<DType>(n.attr_int("to", 0));
    if (!is_foldable_type(to)) return std::nullopt;
    Tensor out = make_tensor(to, in[0]->dims);
    for (uint64_t i = 0; i < out.element_count(); ++i) {
      if (is_float(in[0]->dtype)) store(out, i, in[0]->float_at(i));
      else store_int(out, i, in[0]->int_at(i));
    }
    return out;
  }
  if (op == "Reshape" && need(2)) {
    std::vector<int64_t> shape = in[1]->to_ints();
    int64_t known = 1, infer_at = -1;
    for (size_t i = 0; i < shape.size(); ++i) {
      if (shape[i] == 0 && n.attr_int("allowzero", 0) == 0) shape[i] = i < in[0]->dims.size() ? in[0]->dims[i] : 0;
      if (shape[i] == -1) {
        if (infer_at >= 0) fail(n.describe() + ": more than one -1 in the target shape");
        infer_at = static_cast<int64_t>(i);
      } else {
        if (shape[i] < 0) fail(n.describe() + ": invalid target dimension " + std::to_string(shape[i]));
        known = static_cast<int64_t>(checked_mul(static_cast<uint64_t>(known), static_cast<uint64_t>(shape[i]), n.describe()));
      }
    }
    if (infer_at >= 0) {
      if (known == 0 || in[0]->element_count() % static_cast<uint64_t>(known) != 0)
        fail(n.describe() + ": cannot infer the -1 dimension");
      shape[infer_at] = static_cast<int64_t>(in[0]->element_count() / static_cast<uint64_t>(known));
    }
    return with_dims(*in[0], shape, n);
  }
  if ((op == "Unsqueeze" || op == "Squeeze") && need(1)) {
    std::vector<int64_t> axes = axes_of(n, in);
    std::vector<int64_t> dims = in[0]->dims;
    if (op == "Unsqueeze") {
      const int64_t rank = static_cast<int64_t>(dims.size() + axes.size());
      for (auto& a : axes) a = normalize_axis(a, rank, n);
      std::sort(axes.begin(), axes.end());
      for (int64_t a : axes) dims.insert(dims.begin() + a, 1);
    } else {
      const int64_t rank = static_cast<int64_t>(dims.size());
      std::vector<bool> drop(dims.size(), axes.empty());
      if (axes.empty())
        for (size_t i = 0; i < dims.size(); ++i) drop[i] = dims[i] == 1;
      for (int64_t a : axes) drop[normalize_axis(a, rank, n)] = true;
      std::vector<int64_t> kept;
      for (size_t i = 0; i < dims.size(); ++i)
        if (!drop[i]) kept.push_back(dims[i]);
      dims = kept;
    }
    return with_dims(*in[0], dims, n);
  }
  if (op == "Concat" && need(in.size()) && !in.empty()) return concat(n, in);
  if (op == "Gather" && need(2)) return gather(n, *in[0], *in[1]);
  if (op == "Slice" && need(1)) return slice(n, in);
  if (op == "Range" && need(3)) return range(n, *in[0], *in[1], *in[2]);
  if (op == "ConstantOfShape" && need(1)) {
    Tensor out;
    if (const Attribute* a = n.attr("value"); a && a->tensor) out = *a->tensor;
    else out = make_tensor(DType::Float32, {1});
    if (out.element_count() != 1) fail(n.describe() + ": value must hold one element");
    out.dims = in[0]->to_ints();
    checked_element_count(out.dims, n.describe());
    out.splat = true;
    out.bytes.resize(dtype_size(out.dtype));
    return out;
  }
  if (op == "Not" && need(1)) {
    Tensor out = make_tensor(DType::Bool, in[0]->dims);
    for (uint64_t i = 0; i < out.element_count(); ++i) store_int(out, i, in[0]->int_at(i) == 0);
    return out;
  }
  if (op == "Neg" && need(1)) {
    Tensor out = make_tensor(in[0]->dtype, in[0]->dims);
    for (uint64_t i = 0; i < out.element_count(); ++i) {
      if (is_float(out.dtype)) store(out, i, -in[0]->float_at(i));
      else store_int(out, i, static_cast<int64_t>(0 - static_cast<uint64_t>(in[0]->int_at(i))));
    }
    return out;
  }
  static const char* kBinary[] = {"Add", "Sub", "Mul", "Div", "Max", "Min", "Equal", "Less", "Greater",
                                  "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor"};
  for (const char* b : kBinary)
    if (op == b && in.size() == 2 && need(2)) return binary(n, *in[0], *in[1]);
  return std::nullopt;
}

}  // namespace

std::optional<std::vector<Tensor>> fold_node(const Node& n) {
  if (!n.domain.empty() || n.is_control_flow()) return std::nullopt;
  const Value* first = n.inputs.empty() ? nullptr : n.inputs[0];
  // (One output per folded node: a hostile Shape with two would have make_constants index past.)
  if (n.outputs.size() != 1) return std::nullopt;
  if ((n.op_type == "Shape" || n.op_type == "Size") && first && first->type.is_static()) {
    std::vector<int64_t> dims = first->type.static_dims();
    if (n.op_type == "Size") {
      int64_t count = static_cast<int64_t>(checked_element_count(dims, n.describe()));
      return std::vector<Tensor>{make_int64_tensor({}, std::span<const int64_t>(&count, 1))};
    }
    const int64_t rank = static_cast<int64_t>(dims.size());
    auto clamp_axis = [rank](int64_t a) { return std::clamp(a < 0 ? a + rank : a, int64_t{0}, rank); };
    int64_t start = clamp_axis(n.attr_int("start", 0)), end = clamp_axis(n.attr_int("end", rank));
    std::vector<int64_t> part(dims.begin() + start, dims.begin() + std::max(start, end));
    return std::vector<Tensor>{make_int64_tensor({static_cast<int64_t>(part.size())}, part)};
  }
  std::vector<const Tensor*> in;
  for (const Value* v : n.inputs) {
    if (v && !v->constant) return std::nullopt;
    if (v && !is_foldable_type(v->constant->dtype)) return std::nullopt;
    if (v && v->constant->element_count() > kMaxFoldedElements && n.op_type != "Identity") return std::nullopt;
    in.push_back(v ? v->constant.get() : nullptr);
  }
  if (in.empty()) return std::nullopt;
  std::optional<Tensor> out = fold_single(n, in);
  if (!out) return std::nullopt;
  return std::vector<Tensor>{std::move(*out)};
}

}  // namespace memplan
