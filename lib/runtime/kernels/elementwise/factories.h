// The factories of the elementwise family (elementwise/*.cpp), for elementwise/registration.cpp.
#pragma once

#include <memory>

#include "runtime/kernel_registry.h"
#include "runtime/kernels/common/shape_common.h"

namespace memplan::rt::elt {

// unary_kernels.cpp and binary_kernels.cpp: their ops are instances of one templated factory
// each, added to the registry by the file that defines them.
void add_unary_ops(KernelRegistry& r);
void add_binary_ops(KernelRegistry& r);

// Pow with a constant scalar exponent is a unary kernel (oneDNN eltwise_pow); the binary Pow
// factory hands such nodes over.
std::unique_ptr<Kernel> make_unary_pow(const Node& n, const KernelEnv& env, float exponent);

}  // namespace memplan::rt::elt

namespace memplan::rt::shape {

// compare_logic_kernels.cpp
Factory make_compare(const Node& n, const KernelEnv& env);  // Equal Greater GreaterOrEqual Less LessOrEqual
Factory make_logic(const Node& n, const KernelEnv& env);    // Not And Or Xor
Factory make_bitwise(const Node& n, const KernelEnv& env);  // BitwiseAnd BitwiseOr BitwiseXor BitwiseNot (opset 18)
Factory make_where(const Node& n, const KernelEnv& env);
// math_kernels.cpp
Factory make_mod(const Node& n, const KernelEnv& env);
Factory make_rounding(const Node& n, const KernelEnv& env);     // Floor Ceil Round Sign
Factory make_float_class(const Node& n, const KernelEnv& env);  // IsNaN IsInf
Factory make_cumsum(const Node& n, const KernelEnv& env);

}  // namespace memplan::rt::shape
