// The factories of the dnnl family (dnnl/*.cpp), for dnnl/registration.cpp.
#pragma once

#include <memory>

#include "runtime/kernel.h"

namespace memplan::rt::dnnl_kernels {

// dnnl_conv.cpp
std::unique_ptr<Kernel> make_conv(const Node& node, const KernelEnv& env);
std::unique_ptr<Kernel> make_conv_transpose(const Node& node, const KernelEnv& env);
// dnnl_preact_conv.cpp: a 1x1 Conv with a pre-activation (ir/fused_activation.h); make_conv hands
// such nodes over.
std::unique_ptr<Kernel> make_pre_activated_conv(const Node& node, const KernelEnv& env);
// dnnl_matmul.cpp
std::unique_ptr<Kernel> make_gemm(const Node& node, const KernelEnv& env);
std::unique_ptr<Kernel> make_matmul(const Node& node, const KernelEnv& env);
// dnnl_pool_norm.cpp
std::unique_ptr<Kernel> make_batch_norm(const Node& node, const KernelEnv& env);
std::unique_ptr<Kernel> make_max_pool(const Node& node, const KernelEnv& env);
std::unique_ptr<Kernel> make_average_pool(const Node& node, const KernelEnv& env);
std::unique_ptr<Kernel> make_global_max_pool(const Node& node, const KernelEnv& env);
std::unique_ptr<Kernel> make_global_average_pool(const Node& node, const KernelEnv& env);
std::unique_ptr<Kernel> make_lrn(const Node& node, const KernelEnv& env);
std::unique_ptr<Kernel> make_softmax(const Node& node, const KernelEnv& env);
std::unique_ptr<Kernel> make_log_softmax(const Node& node, const KernelEnv& env);
// Whether make_softmax / make_log_softmax take the node: a static float32 input (KernelAccepts).
bool softmax_accepts(const Node& node);
// window_pool.cpp: the pools of ir/window_pool.h (LpPool; make_max_pool and make_average_pool
// hand such MaxPool and AveragePool nodes over).
std::unique_ptr<Kernel> make_window_pool(const Node& node, const KernelEnv& env);

}  // namespace memplan::rt::dnnl_kernels
