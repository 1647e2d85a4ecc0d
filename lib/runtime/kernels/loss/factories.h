// The factories of the loss family (loss/loss_kernels.cpp), for loss/registration.cpp.
#pragma once

#include <memory>

#include "runtime/kernel.h"

namespace memplan::rt::norm {

using Factory = std::unique_ptr<Kernel>;

std::unique_ptr<Kernel> make_nll_loss(const Node& n, const KernelEnv& env);
std::unique_ptr<Kernel> make_softmax_cross_entropy(const Node& n, const KernelEnv& env);
// Whether both take the node (KernelAccepts): float32 or float64 scores.
bool loss_accepts(const Node& n);

}  // namespace memplan::rt::norm
