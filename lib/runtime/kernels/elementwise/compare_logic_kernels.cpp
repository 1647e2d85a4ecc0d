// Comparisons (Equal, Greater, GreaterOrEqual, Less, LessOrEqual) and logic (Not, And, Or, Xor)
// with numpy broadcasting, bool output; Where. Bools are bytes, any non-zero byte reads as true.
#include "runtime/kernels/common/shape_common.h"
#include "runtime/kernels/elementwise/factories.h"

namespace memplan::rt::shape {
namespace {

template <typename T>
Factory compare_for(const std::string& op, const std::string& where, const Node& n) {
  if (op == "Equal") return make_binary<T, uint8_t>(where, n, [](T a, T b) -> uint8_t { return a == b; });
  if (op == "Greater") return make_binary<T, uint8_t>(where, n, [](T a, T b) -> uint8_t { return a > b; });
  if (op == "GreaterOrEqual") return make_binary<T, uint8_t>(where, n, [](T a, T b) -> uint8_t { return a >= b; });
  if (op == "Less") return make_binary<T, uint8_t>(where, n, [](T a, T b) -> uint8_t { return a < b; });
  if (op == "LessOrEqual") return make_binary<T, uint8_t>(where, n, [](T a, T b) -> uint8_t { return a <= b; });
  return nullptr;
}

void check_output(const Node& n, DType want, const std::string& where) {
  if (n.outputs[0]->type.dtype != want)
    fail_at(where, "output must be " + dtype_name(want) + ", not " + dtype_name(n.outputs[0]->type.dtype));
}

// ---- Where ----

template <size_t ES>
void where_run(const Broadcast& b, const KernelArgs& a) {
  const uint8_t* cond = a.inputs[0].as<const uint8_t>();
  const std::byte* x = a.inputs[1].data;
  const std::byte* y = a.inputs[2].data;
  std::byte* out = a.outputs[0].data;
  for_each_broadcast<3>(b, [&](uint64_t i, const std::array<int64_t, 3>& o) {
    std::memcpy(out + i * ES, cond[o[0]] ? x + o[1] * static_cast<int64_t>(ES) : y + o[2] * static_cast<int64_t>(ES), ES);
  });
}

class WhereKernel final : public Kernel {
 public:
  WhereKernel(std::string where, const Node& n, uint32_t elem) : where_(std::move(where)), elem_(elem), dynamic_(any_dynamic(n)) {
    if (!dynamic_) {
      TensorView c = static_view(n.inputs[0], where_), x = static_view(n.inputs[1], where_), y = static_view(n.inputs[2], where_);
      const TensorView* in[] = {&c, &x, &y};
      plan_ = make_broadcast(in, 3, where_);
    }
  }
  void run(const KernelArgs& a) override {
    const Broadcast* p = &plan_;
    Broadcast local;
    if (dynamic_) {
      const TensorView* in[] = {&a.inputs[0], &a.inputs[1], &a.inputs[2]};
      local = make_broadcast(in, 3, where_);
      set_shape(a.outputs[0], local.out_rank, local.out_dims.data(), where_);
      p = &local;
    }
    dispatch_size(elem_, [&](auto es) { where_run<decltype(es)::value>(*p, a); });
  }

 private:
  std::string where_;
  uint32_t elem_;
  bool dynamic_;
  Broadcast plan_;
};

}  // namespace

Factory make_compare(const Node& n, const KernelEnv& env) {
  std::string where = check_arity(n, env, 2, 2);
  const DType t = n.inputs[0]->type.dtype;
  if (n.inputs[1]->type.dtype != t) fail_at(where, "inputs differ in type");
  check_output(n, DType::Bool, where);
  if (t == DType::Bool) {
    if (n.op_type != "Equal") unsupported_at(where, "bool inputs are not supported");
    return make_binary<uint8_t, uint8_t>(where, n, [](uint8_t a, uint8_t b) -> uint8_t { return (a != 0) == (b != 0); });
  }
  Factory k;
  dispatch(t, AllNumericTypes{}, [&](auto tag) { k = compare_for<decltype(tag)>(n.op_type, where, n); });
  if (!k) unsupported_at(where, "inputs of type " + dtype_name(t) + " are not supported");
  return k;
}

Factory make_logic(const Node& n, const KernelEnv& env) {
  const bool unary = n.op_type == "Not";
  std::string where = check_arity(n, env, unary ? 1 : 2, unary ? 1 : 2);
  for (const Value* v : n.inputs)
    if (v->type.dtype != DType::Bool) unsupported_at(where, "inputs of type " + dtype_name(v->type.dtype) + " are not supported");
  check_output(n, DType::Bool, where);
  if (unary) return make_unary<uint8_t, uint8_t>(where, n, [](uint8_t x) -> uint8_t { return x == 0; });
  if (n.op_type == "And") return make_binary<uint8_t, uint8_t>(where, n, [](uint8_t a, uint8_t b) -> uint8_t { return a && b; });
  if (n.op_type == "Or") return make_binary<uint8_t, uint8_t>(where, n, [](uint8_t a, uint8_t b) -> uint8_t { return a || b; });
  if (n.op_type == "Xor") return make_binary<uint8_t, uint8_t>(where, n, [](uint8_t a, uint8_t b) -> uint8_t { return (a != 0) != (b != 0); });
  return nullptr;
}

Factory make_bitwise(const Node& n, const KernelEnv& env) {
  const bool unary = n.op_type == "BitwiseNot";
  std::string where = check_arity(n, env, unary ? 1 : 2, unary ? 1 : 2);
  const DType t = n.inputs[0]->type.dtype;
  for (const Value* v : n.inputs)
    if (v->type.dtype != t) fail_at(where, "inputs differ in type");
  check_output(n, t, where);
  Factory k;
  dispatch(t, IntTypes{}, [&](auto tag) {
    using T = decltype(tag);
    if (unary) k = make_unary<T, T>(where, n, [](T x) -> T { return static_cast<T>(~x); });
    else if (n.op_type == "BitwiseAnd") k = make_binary<T, T>(where, n, [](T a, T b) -> T { return static_cast<T>(a & b); });
    else if (n.op_type == "BitwiseOr") k = make_binary<T, T>(where, n, [](T a, T b) -> T { return static_cast<T>(a | b); });
    else k = make_binary<T, T>(where, n, [](T a, T b) -> T { return static_cast<T>(a ^ b); });
  });
  if (!k) unsupported_at(where, "inputs of type " + dtype_name(t) + " are not supported (integer types only)");
  return k;
}

Factory make_where(const Node& n, const KernelEnv& env) {
  std::string where = check_arity(n, env, 3, 3);
  if (n.inputs[0]->type.dtype != DType::Bool) fail_at(where, "the condition must be bool");
  const DType t = n.inputs[1]->type.dtype;
  if (n.inputs[2]->type.dtype != t) fail_at(where, "X and Y differ in type");
  check_output(n, t, where);
  return std::make_unique<WhereKernel>(where, n, movable_size(t, where));
}

}  // namespace memplan::rt::shape
