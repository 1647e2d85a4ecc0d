// ConvInteger (int32 output, or float32 with the fused dequantizing epilogue of
// ir/fused_dequantize.h) and QLinearConv on oneDNN's int8 convolution, for quantized_conv.cpp.
#pragma once

#include <memory>

#include "runtime/kernel.h"

namespace memplan::rt::quant {

// Null when oneDNN cannot run the node exactly (the caller then uses its plain loops): weights or
// their zero points not constant, weights minus zero point outside int8, QLinearConv's scales or
// output zero point not constant, channel-blocked activations, a CPU without VNNI (whose u8 x s8
// products saturate in 16 bits), or no oneDNN implementation.
std::unique_ptr<Kernel> make_dnnl_conv_integer(const Node& n, const KernelEnv& env);

// True when this CPU (as DNNL_MAX_CPU_ISA limits it) sums u8 x s8 products exactly (VNNI), so
// the two makers above can return a kernel at all.
bool int8_products_exact();
std::unique_ptr<Kernel> make_dnnl_qlinear_conv(const Node& n, const KernelEnv& env);

}  // namespace memplan::rt::quant
