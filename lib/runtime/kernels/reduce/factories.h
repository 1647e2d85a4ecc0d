// The factories of the reduce family (reduce/*.cpp), for reduce/registration.cpp.
#pragma once

#include "runtime/kernel_registry.h"
#include "runtime/kernels/common/shape_common.h"

namespace memplan::rt::elt {

// reduce_kernels.cpp: the Reduce* ops are instances of one templated factory, added to the
// registry by that file.
void add_reduce_ops(KernelRegistry& r);

}  // namespace memplan::rt::elt

namespace memplan::rt::shape {

// arg_topk_kernels.cpp
Factory make_arg(const Node& n, const KernelEnv& env);  // ArgMax ArgMin
Factory make_hardmax(const Node& n, const KernelEnv& env);
Factory make_topk(const Node& n, const KernelEnv& env);

}  // namespace memplan::rt::shape
