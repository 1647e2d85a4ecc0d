// The quantized family: 8-bit quantization and the integer ops on its values, plain C++ with
// int32 accumulators. QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, MatMulInteger,
// QLinearMatMul, ConvInteger and QLinearConv.
#include "runtime/kernel_registry.h"
#include "runtime/kernels/quantized/factories.h"

namespace memplan::rt {

void register_quantized_kernels(KernelRegistry& r) {
  using namespace quant;
  r.add("QuantizeLinear", make_quantize);
  r.add("DequantizeLinear", make_dequantize);
  r.add("DynamicQuantizeLinear", make_dynamic_quantize);
  r.add("MatMulInteger", make_matmul_integer);
  r.add("QLinearMatMul", make_qlinear_matmul);
  r.add("ConvInteger", make_conv_integer);
  r.add("QLinearConv", make_qlinear_conv);
}

}  // namespace memplan::rt
