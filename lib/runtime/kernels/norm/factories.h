// The factories of the norm family (norm/norm_kernels.cpp), for norm/registration.cpp and for
// dnnl/ (BatchNormalization hands training-mode nodes over).
#pragma once

#include <memory>

#include "runtime/kernel.h"

namespace memplan::rt::norm {

using Factory = std::unique_ptr<Kernel>;

Factory make_layer_norm(const Node& n, const KernelEnv& env);
Factory make_instance_norm(const Node& n, const KernelEnv& env);
Factory make_mean_variance_norm(const Node& n, const KernelEnv& env);
Factory make_group_norm(const Node& n, const KernelEnv& env);  // group_norm.cpp (opsets 18, 21)
// BatchNormalization with training_mode = 1 (opset 14+): the batch's own mean and variance.
Factory make_batch_norm_training(const Node& n, const KernelEnv& env);
// Whether make_layer_norm / make_mean_variance_norm take the node (KernelAccepts): float32 or
// float64 inputs, and LayerNormalization's statistics (if any) in float32 (stash_type 1).
bool norm_accepts(const Node& n);

}  // namespace memplan::rt::norm
