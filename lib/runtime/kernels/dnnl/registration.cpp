// The dnnl family: the kernels that run as oneDNN primitives. Conv, ConvTranspose, Gemm, MatMul,
// BatchNormalization (inference), MaxPool, AveragePool, GlobalMaxPool, GlobalAveragePool, LRN,
// Softmax, LogSoftmax.
// float32 only; static shapes; activations in plain row-major layout, constant weights reordered
// once into the primitive's preferred layout (format_tag::any).
//
// Fusions (made by passes/fuse_conv on Conv nodes; absent on imported models):
//
//   activation                The fused activation of ir/fused_activation.h (Relu, Clip, Swish,
//                             HardSwish; BatchNormalization: Relu), applied to the result as a
//                             oneDNN eltwise post-op.
//   input 3 (optional)        A tensor added to the Conv result (Conv + Add fusion, oneDNN sum
//                             post-op). It must have exactly the output's shape. The executor is
//                             expected to give it the output's buffer (same data pointer); if the
//                             pointers differ, the kernel copies it into the output first.
//
// With both, the result is  activation(conv(X, W) + B + input3) : the sum comes before the
// activation (the ResNet pattern Conv -> Add -> Relu).
//
// Implementation is split over common/dnnl_common.{h,cpp} (shared helpers and the PrimitiveKernel
// base), dnnl_conv.cpp, dnnl_matmul.cpp, dnnl_pool_norm.cpp and window_pool.cpp (LpPool, MaxPool
// with its Indices output, dilated MaxPool and AveragePool: memplan's own loop).
#include "runtime/kernel_registry.h"
#include "runtime/kernels/dnnl/factories.h"
#include "runtime/kernels/dnnl/patch_chain.h"

namespace memplan::rt {

void register_dnnl_kernels(KernelRegistry& r) {
  using namespace dnnl_kernels;
  r.add("Conv", make_conv);
  r.add("ConvTranspose", make_conv_transpose);
  r.add("Gemm", make_gemm);
  r.add("MatMul", make_matmul);
  r.add("BatchNormalization", make_batch_norm);
  r.add("MaxPool", make_max_pool);
  r.add("AveragePool", make_average_pool);
  r.add("LpPool", make_window_pool);
  r.add("GlobalMaxPool", make_global_max_pool);
  r.add("GlobalAveragePool", make_global_average_pool);
  r.add("LRN", make_lrn);
  r.add("Softmax", make_softmax, softmax_accepts);
  r.add("LogSoftmax", make_log_softmax, softmax_accepts);
  r.add(kPatchChainOp, make_patch_chain);  // memplan's own: passes/patch_regions makes it
}

}  // namespace memplan::rt
