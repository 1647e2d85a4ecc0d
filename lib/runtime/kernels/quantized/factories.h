// The factories of the quantized family (quantized/*.cpp), for quantized/registration.cpp.
#pragma once

#include <memory>

#include "runtime/kernel.h"

namespace memplan::rt::quant {

// quantize_kernels.cpp
std::unique_ptr<Kernel> make_quantize(const Node& n, const KernelEnv& env);
std::unique_ptr<Kernel> make_dequantize(const Node& n, const KernelEnv& env);
std::unique_ptr<Kernel> make_dynamic_quantize(const Node& n, const KernelEnv& env);
// An Add of 8-bit values (ir/fused_dequantize.h's memplan_quantized Add); binary_kernels.cpp's Add
// factory hands it over.
std::unique_ptr<Kernel> make_quantized_add(const Node& n, const KernelEnv& env);
// quantized_matmul.cpp
std::unique_ptr<Kernel> make_matmul_integer(const Node& n, const KernelEnv& env);
std::unique_ptr<Kernel> make_qlinear_matmul(const Node& n, const KernelEnv& env);
// quantized_conv.cpp
std::unique_ptr<Kernel> make_conv_integer(const Node& n, const KernelEnv& env);
std::unique_ptr<Kernel> make_qlinear_conv(const Node& n, const KernelEnv& env);

}  // namespace memplan::rt::quant
