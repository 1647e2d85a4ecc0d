// The plain C++ normalization, loss and matrix-structure kernels: the factories of
// norm_kernels.cpp, loss_kernels.cpp, matrix_kernels.cpp and einsum_kernel.cpp, registered
// together by norm_loss_kernels.cpp. They use the helpers of shape_common.h.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "runtime/kernel.h"

namespace memplan::rt::norm {

using Factory = std::unique_ptr<Kernel>;

// Elements a value's buffer can hold at run time: its static element count, else its capacity
// over the element size. Fails (Unsupported) naming the value when neither is known: kernels size
// their scratchpads with it.
uint64_t element_bound(const Value* v, const std::string& where);

// norm_kernels.cpp
Factory make_layer_norm(const Node& n, const KernelEnv& env);
Factory make_instance_norm(const Node& n, const KernelEnv& env);
Factory make_mean_variance_norm(const Node& n, const KernelEnv& env);
// BatchNormalization with training_mode = 1 (opset 14+): the batch's own mean and variance.
Factory make_batch_norm_training(const Node& n, const KernelEnv& env);
// Whether make_layer_norm / make_mean_variance_norm take the node (KernelAccepts): float32 or
// float64 inputs, and LayerNormalization's statistics (if any) in float32 (stash_type 1).
bool norm_accepts(const Node& n);
// loss_kernels.cpp
Factory make_nll_loss(const Node& n, const KernelEnv& env);
Factory make_softmax_cross_entropy(const Node& n, const KernelEnv& env);
// Whether both take the node (KernelAccepts): float32 or float64 scores.
bool loss_accepts(const Node& n);
// matrix_kernels.cpp
Factory make_trilu(const Node& n, const KernelEnv& env);
Factory make_eye_like(const Node& n, const KernelEnv& env);
Factory make_det(const Node& n, const KernelEnv& env);
// einsum_kernel.cpp
Factory make_einsum(const Node& n, const KernelEnv& env);

}  // namespace memplan::rt::norm
