// The factories of the norm family (norm/norm_kernels.cpp), for norm/registration.cpp and for
// dnnl/ (BatchNormalization hands training-mode nodes over).
#pragma once

#include <memory>
#include <string>

#include "runtime/kernel.h"

namespace memplan::rt::norm {

using Factory = std::unique_ptr<Kernel>;

Factory make_layer_norm(const Node& n, const KernelEnv& env);
Factory make_instance_norm(const Node& n, const KernelEnv& env);
Factory make_mean_variance_norm(const Node& n, const KernelEnv& env);
Factory make_group_norm(const Node& n, const KernelEnv& env);  // group_norm.cpp (opsets 18, 21)
Factory make_rms_norm(const Node& n, const KernelEnv& env);    // rms_norm.cpp (opset 23)
Factory make_rotary_embedding(const Node& n, const KernelEnv& env);  // rotary_embedding.cpp (opset 23)
Factory make_attention(const Node& n, const KernelEnv& env);          // attention.cpp (opset 23, no cache)
// Softmax (or, `log`, LogSoftmax) of float32 [outer, mid, inner] along mid, where oneDNN's is slow:
// a short last axis (inner 1), or an axis it has only its reference kernel for (softmax_loops.cpp;
// dnnl/ hands such nodes over).
Factory make_softmax_loop(uint64_t mid, uint64_t inner, bool log);
// BatchNormalization with training_mode = 1 (opset 14+): the batch's own mean and variance.
Factory make_batch_norm_training(const Node& n, const KernelEnv& env);
// Whether make_layer_norm / make_mean_variance_norm take the node (KernelAccepts): float32 or
// float64 inputs, and LayerNormalization's statistics (if any) in float32 (stash_type 1).
bool norm_accepts(const Node& n);
// The shape " [2, 3]" of a view, for the family's messages.
std::string dims_text(const TensorView& t);
// The opset-18+ kernels of the family run float32 only: refuses another type among the first
// `count` inputs, naming it.
void require_float32_inputs(const Node& n, size_t count, const std::string& where);

}  // namespace memplan::rt::norm
