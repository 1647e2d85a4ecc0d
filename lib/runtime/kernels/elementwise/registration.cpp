// The elementwise family: ops that compute each output element from the input elements at the
// same (broadcast) position. Unary math and activations (oneDNN eltwise where it is exact enough),
// binary and variadic arithmetic with numpy broadcasting (Add ... Mean, Pow, PRelu, BitShift),
// comparisons, logic and Where, Mod, Floor / Ceil / Round / Sign, IsNaN / IsInf; and CumSum, which
// shares math_kernels.cpp with them.
#include "runtime/kernel_registry.h"
#include "runtime/kernels/elementwise/factories.h"

namespace memplan::rt {

void register_elementwise_kernels(KernelRegistry& r) {
  elt::add_unary_ops(r);
  elt::add_binary_ops(r);
  using namespace shape;
  for (const char* op : {"Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual"}) r.add(op, make_compare);
  for (const char* op : {"Not", "And", "Or", "Xor"}) r.add(op, make_logic);
  for (const char* op : {"BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot"}) r.add(op, make_bitwise);
  r.add("Where", make_where);
  r.add("Mod", make_mod);
  for (const char* op : {"Floor", "Ceil", "Round", "Sign"}) r.add(op, make_rounding);
  for (const char* op : {"IsNaN", "IsInf"}) r.add(op, make_float_class);
  r.add("CumSum", make_cumsum);
}

}  // namespace memplan::rt
