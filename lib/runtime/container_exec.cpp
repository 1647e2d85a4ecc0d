// The sequence and optional ops (ir/container_ops.h), run by the session on its containers
// (runtime/container_value.h). A tensor taken out of a container (SequenceAt, ConcatFromSequence,
// OptionalGetElement) is a dynamic tensor, or planned where its shape is known; one put in is
// copied. Positions and axes come from the model and its inputs: each is checked, and a bad one is
// an error naming the node.
#include <cstring>
#include <string>

#include "memplan/error.h"
#include "runtime/session_impl.h"

namespace memplan {

namespace {

using Home = CompiledModel::Impl::Home;

uint64_t product(const rt::TensorView& v, int from, int to) {
  uint64_t n = 1;
  for (int d = from; d < to; ++d) n *= static_cast<uint64_t>(v.dims[d]);
  return n;
}

class ContainerOp {
 public:
  ContainerOp(Session::Impl& s, const NodeExec& ne) : s_(s), ne_(ne), n_(*ne.node) {}

  void run() {
    const std::string& op = n_.op_type;
    if (op == "SequenceEmpty") out_container().clear();
    else if (op == "SequenceConstruct") construct();
    else if (op == "SequenceInsert") insert();
    else if (op == "SequenceErase") erase();
    else if (op == "SequenceAt") at();
    else if (op == "SequenceLength") write_int64(static_cast<int64_t>(in_container(0).size()));
    else if (op == "ConcatFromSequence") concat();
    else if (op == "SplitToSequence") split();
    else if (op == "Optional") wrap();
    else if (op == "OptionalHasElement") has_element();
    else if (op == "OptionalGetElement") get_element();
    else if (op == "Identity") out_container().assign(in_container(0));
    else fail_internal(n_.describe() + " is not a container op");
  }

 private:
  [[noreturn]] void refuse(const std::string& why) const { fail(s_.m.model.path + ": " + n_.describe() + ": " + why); }
  bool has_input(size_t i) const { return i < ne_.inputs.size() && ne_.inputs[i] >= 0; }
  bool is_container(int32_t id) const { return s_.m.homes[static_cast<size_t>(id)] == Home::Container; }
  const rt::TensorView& in_tensor(size_t i) {
    if (!has_input(i) || is_container(ne_.inputs[i])) refuse("its input " + std::to_string(i) + " is not a tensor");
    return s_.view(ne_.inputs[i]);
  }
  rt::TensorView& out_tensor() {
    if (ne_.outputs.empty() || ne_.outputs[0] < 0 || is_container(ne_.outputs[0])) refuse("its output is not a tensor");
    return s_.view(ne_.outputs[0]);
  }
  // The scalar output of SequenceLength (int64) or OptionalHasElement (bool).
  rt::TensorView& scalar_out(DType dtype) {
    rt::TensorView& out = out_tensor();
    if (out.dtype != dtype || out.capacity < dtype_size(dtype) || !out.data)
      refuse("its output '" + n_.outputs[0]->name + "' is not a " + dtype_name(dtype) + " scalar");
    return out;
  }
  // (A model whose types say otherwise, which inference let through, is refused here.)
  const rt::ContainerValue& in_container(size_t i) {
    if (!has_input(i) || !is_container(ne_.inputs[i])) refuse("its input " + std::to_string(i) + " is not a sequence or optional");
    return s_.container(ne_.inputs[i]);
  }
  rt::ContainerValue& out_container() {
    if (ne_.outputs.empty() || ne_.outputs[0] < 0 || !is_container(ne_.outputs[0]))
      refuse("its output is not a sequence or optional");
    return s_.container(ne_.outputs[0]);
  }
  void write_out(const rt::TensorView& t) {
    out_tensor();
    s_.write_tensor(ne_.outputs[0], t, n_, "output");
  }

  void write_int64(int64_t x) {
    rt::TensorView& out = scalar_out(DType::Int64);
    std::memcpy(out.data, &x, 8);
    out.rank = 0;
  }

  // Input i, a tensor of int32 or int64 (positions and split lengths).
  const rt::TensorView& int_tensor(size_t i) {
    const rt::TensorView& t = in_tensor(i);
    if (t.dtype != DType::Int32 && t.dtype != DType::Int64)
      refuse("its input '" + n_.inputs[i]->name + "' is " + dtype_name(t.dtype) + ", not int32 or int64");
    return t;
  }

  // The position input `i` names in a sequence of `size` elements: negative counts from the end;
  // `past_end` allows size itself (an insert at the end).
  size_t position(size_t i, size_t size, bool past_end) {
    const rt::TensorView& t = int_tensor(i);
    if (t.element_count() != 1) refuse("its position '" + n_.inputs[i]->name + "' is not a scalar");
    const int64_t given = rt::scalar_int(t);
    const auto n = static_cast<int64_t>(size);
    const int64_t pos = given < 0 ? given + n : given;
    if (pos < 0 || pos > n || (pos == n && !past_end))
      refuse("position " + std::to_string(given) + " is out of range for a sequence of " + std::to_string(n) +
             " tensors");
    return static_cast<size_t>(pos);
  }

  void check_element_type(const rt::TensorView& t, const std::string& name) {
    const DType want = n_.outputs[0]->type.dtype;
    if (want != DType::Undefined && t.dtype != want)
      refuse("tensor '" + name + "' is " + dtype_name(t.dtype) + ", the sequence holds " + dtype_name(want));
  }

  void construct() {
    rt::ContainerValue& out = out_container();
    out.clear();
    for (size_t i = 0; i < ne_.inputs.size(); ++i) {
      check_element_type(in_tensor(i), n_.inputs[i]->name);
      out.push_back(in_tensor(i));
    }
  }

  void insert() {
    rt::ContainerValue& out = out_container();
    out.assign(in_container(0));
    const size_t pos = has_input(2) ? position(2, out.size(), true) : out.size();
    check_element_type(in_tensor(1), n_.inputs[1]->name);
    out.insert(pos, in_tensor(1));
  }

  void erase() {
    rt::ContainerValue& out = out_container();
    out.assign(in_container(0));
    if (out.size() == 0) refuse("it erases from an empty sequence");
    out.erase(has_input(1) ? position(1, out.size(), false) : out.size() - 1);
  }

  void at() {
    const rt::ContainerValue& seq = in_container(0);
    write_out(seq.at(position(1, seq.size(), false)));
  }

  // Axis `a` of a rank `rank` tensor (negative counts from the end).
  int axis(int64_t a, int rank) {
    const int64_t norm = a < 0 ? a + rank : a;
    if (norm < 0 || norm >= rank)
      refuse("axis " + std::to_string(a) + " is out of range for rank " + std::to_string(rank));
    return static_cast<int>(norm);
  }

  void concat() {
    const rt::ContainerValue& seq = in_container(0);
    if (seq.size() == 0) refuse("it concatenates an empty sequence");
    const bool new_axis = n_.attr_int("new_axis", 0) != 0;
    const rt::TensorView& first = seq.at(0);
    const int out_rank = first.rank + (new_axis ? 1 : 0);
    if (out_rank > rt::kMaxRank) refuse("its output would have rank " + std::to_string(out_rank));
    const int ax = axis(n_.attr_int("axis", 0), out_rank);
    rt::TensorView shape = first;
    shape.rank = out_rank;
    if (new_axis) {
      for (int d = out_rank - 1; d > ax; --d) shape.dims[d] = first.dims[d - 1];
      shape.dims[ax] = 0;
    } else {
      shape.dims[ax] = 0;
    }
    for (size_t i = 0; i < seq.size(); ++i) {
      const rt::TensorView& e = seq.at(i);
      bool fits = e.rank == first.rank && e.dtype == first.dtype;
      for (int d = 0; fits && d < first.rank; ++d) fits = d == ax && !new_axis ? true : e.dims[d] == first.dims[d];
      if (!fits) refuse("its tensors differ in type or shape outside axis " + std::to_string(ax));
      shape.dims[ax] += new_axis ? 1 : e.dims[ax];
    }
    // Written into the output's memory, element by element along the axis, one outer row at a time.
    rt::TensorView& out = reserve_output(shape);
    const uint64_t outer = product(shape, 0, ax), esize = dtype_size(first.dtype);
    uint64_t offset = 0;
    const uint64_t row = product(shape, ax, shape.rank) * esize;
    for (size_t i = 0; i < seq.size(); ++i) {
      const rt::TensorView& e = seq.at(i);
      const uint64_t part = product(e, ax, e.rank) * esize;
      for (uint64_t o = 0; o < outer; ++o)
        if (part) std::memcpy(out.data + o * row + offset, e.data + o * part, part);
      offset += part;
    }
  }

  // The output's memory for a tensor of `shape` (grown where it is dynamic), shaped so.
  rt::TensorView& reserve_output(const rt::TensorView& shape) {
    out_tensor();
    const int32_t id = ne_.outputs[0];
    const uint64_t bytes = shape.byte_size();
    if (s_.m.homes[static_cast<size_t>(id)] == Home::Dynamic) s_.reserve_dynamic(id, bytes, false);
    rt::TensorView& out = s_.view(id);
    if (bytes > out.capacity)
      refuse("its output '" + n_.outputs[0]->name + "' needs " + std::to_string(bytes) + " bytes but its buffer holds " +
             std::to_string(out.capacity));
    out.rank = shape.rank;
    out.dims = shape.dims;
    return out;
  }

  void split() {
    const rt::TensorView& x = in_tensor(0);
    if (x.rank == 0) refuse("it splits a scalar");
    const int ax = axis(n_.attr_int("axis", 0), x.rank);
    const int64_t length = x.dims[ax];
    // The pieces: one per index (each losing the axis unless keepdims), pieces of one length
    // (the last shorter), or of the lengths given.
    const rt::TensorView* split = has_input(1) ? &int_tensor(1) : nullptr;
    const bool listed = split && split->rank > 0;
    auto listed_length = [&](uint64_t k) {
      return split->dtype == DType::Int32 ? int64_t{split->as<int32_t>()[k]} : split->as<int64_t>()[k];
    };
    int64_t each = 1;
    uint64_t pieces = static_cast<uint64_t>(length);
    if (listed) {
      pieces = split->element_count();
      int64_t total = 0;
      for (uint64_t k = 0; k < pieces; ++k) {
        const int64_t l = listed_length(k);
        if (l < 0 || l > length - total)
          refuse("its split lengths do not add up to " + std::to_string(length) + ", the size of axis " + std::to_string(ax));
        total += l;
      }
      if (total != length)
        refuse("its split lengths add up to " + std::to_string(total) + ", not to " + std::to_string(length) +
               ", the size of axis " + std::to_string(ax));
    } else if (split) {
      each = rt::scalar_int(*split);
      if (each <= 0) refuse("its split length " + std::to_string(each) + " is not positive");
      pieces = static_cast<uint64_t>((length + each - 1) / each);
    }
    const bool drop_axis = !split && n_.attr_int("keepdims", 1) == 0;
    rt::ContainerValue& out = out_container();
    out.clear();
    const uint64_t outer = product(x, 0, ax), esize = dtype_size(x.dtype);
    const uint64_t inner = product(x, ax + 1, x.rank) * esize, row = static_cast<uint64_t>(length) * inner;
    int64_t start = 0;
    for (uint64_t k = 0; k < pieces; ++k) {
      const int64_t l = listed ? listed_length(k) : std::min(each, length - start);
      rt::TensorView shape = x;
      shape.dims[ax] = l;
      if (drop_axis) {
        for (int d = ax; d + 1 < x.rank; ++d) shape.dims[d] = x.dims[d + 1];
        shape.rank = x.rank - 1;
      }
      const rt::TensorView& piece = out.append_shaped(shape);
      const uint64_t part = static_cast<uint64_t>(l) * inner;
      for (uint64_t o = 0; o < outer; ++o)
        if (part) std::memcpy(piece.data + o * part, x.data + o * row + static_cast<uint64_t>(start) * inner, part);
      start += l;
    }
  }

  void wrap() {
    rt::ContainerValue& out = out_container();
    out.clear();
    if (!has_input(0)) {
      out.present = false;
      return;
    }
    if (is_container(ne_.inputs[0])) out.assign(in_container(0));
    else out.push_back(in_tensor(0));
  }

  void has_element() {
    bool has = has_input(0) && (!is_container(ne_.inputs[0]) || in_container(0).present);
    rt::TensorView& out = scalar_out(DType::Bool);
    *out.data = std::byte{has ? uint8_t{1} : uint8_t{0}};
    out.rank = 0;
  }

  void get_element() {
    if (!is_container(ne_.inputs[0])) {  // version 18: a tensor is its own element
      write_out(in_tensor(0));
      return;
    }
    const rt::ContainerValue& in = in_container(0);
    if (!in.present) refuse("optional '" + n_.inputs[0]->name + "' holds no value");
    if (is_container(ne_.outputs[0])) {
      out_container().assign(in);
      out_container().present = true;
    } else {
      write_out(in.at(0));
    }
  }

  Session::Impl& s_;
  const NodeExec& ne_;
  const Node& n_;
};

}  // namespace

void Session::Impl::write_tensor(int32_t id, const rt::TensorView& src, const Node& node, const char* what) {
  if (m.homes[static_cast<size_t>(id)] == Home::Dynamic) reserve_dynamic(id, src.byte_size(), false);
  copy_into(view(id), src, node, what);
}

void Session::Impl::run_container_op(const NodeExec& ne) { ContainerOp(*this, ne).run(); }

}  // namespace memplan
