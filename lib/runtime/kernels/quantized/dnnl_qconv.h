// ConvInteger (int32 output, or float32 with the fused dequantizing epilogue of
// ir/fused_dequantize.h) and QLinearConv on oneDNN's int8 convolution, for quantized_conv.cpp.
#pragma once

#include <memory>

#include "runtime/kernel.h"

namespace memplan::rt::quant {

// Null when oneDNN cannot run the node exactly (the caller then uses its plain loops): weights or
// their zero points not constant, QLinearConv's scales or output zero point not constant, no
// oneDNN implementation, or, where the sums run in float32 (a CPU without VNNI, whose u8 x s8
// products saturate in 16 bits; a QLinearConv's weights less their zero point outside int8), an
// int32 or 8-bit output channel whose sums could pass 2^24. A ConvInteger's weights outside int8
// run shifted into it, with the shift's share added back (conv_compensation.h).
// Where oneDNN stages plain activations in its scratchpad, the kernel's leaner variants
// (Kernel::take_leaner) are the convolution in bands of output rows, then `leanest` (the
// caller's loops, which stage nothing), if given.
std::unique_ptr<Kernel> make_dnnl_conv_integer(const Node& n, const KernelEnv& env, std::unique_ptr<Kernel> leanest);
std::unique_ptr<Kernel> make_dnnl_qlinear_conv(const Node& n, const KernelEnv& env, std::unique_ptr<Kernel> leanest);
// Whether make_dnnl_qlinear_conv makes a kernel for the node, whatever its activations' layouts
// (passes/int8_layouts.h asks before it chooses them). Reorders no weights.
bool dnnl_runs_qlinear_conv(const Node& n, const KernelEnv& env);

// True when this CPU (as DNNL_MAX_CPU_ISA limits it) sums u8 x s8 products exactly (VNNI): the
// two makers above run oneDNN's int8 convolution; otherwise its float32 one.
bool int8_products_exact();

}  // namespace memplan::rt::quant
