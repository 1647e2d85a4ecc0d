// ConvInteger (int32 output, or float32 with the fused dequantizing epilogue of
// ir/fused_dequantize.h) and QLinearConv on oneDNN's int8 convolution, for quantized_conv.cpp.
#pragma once

#include <memory>

#include "runtime/kernel.h"

namespace memplan::rt::quant {

// Null when oneDNN cannot run the node exactly (the caller then uses its plain loops): weights or
// their zero points not constant, weights minus zero point outside int8, QLinearConv's scales or
// output zero point not constant, no oneDNN implementation, or, on a
// CPU without VNNI (whose u8 x s8 products saturate in 16 bits, so the sums run in float32), an
// output channel whose sums could pass 2^24.
std::unique_ptr<Kernel> make_dnnl_conv_integer(const Node& n, const KernelEnv& env);
std::unique_ptr<Kernel> make_dnnl_qlinear_conv(const Node& n, const KernelEnv& env);
// Whether make_dnnl_qlinear_conv makes a kernel for the node, whatever its activations' layouts
// (passes/int8_layouts.h asks before it chooses them). Reorders no weights.
bool dnnl_runs_qlinear_conv(const Node& n, const KernelEnv& env);

// True when this CPU (as DNNL_MAX_CPU_ISA limits it) sums u8 x s8 products exactly (VNNI): the
// two makers above run oneDNN's int8 convolution; otherwise its float32 one.
bool int8_products_exact();

}  // namespace memplan::rt::quant
