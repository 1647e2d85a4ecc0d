#include "runtime/kernel_registry.h"
#include "runtime/kernels/elementwise_common.h"

namespace memplan::rt {

// Elementwise (unary, binary, variadic), Concat, Reduce*, Resize/Upsample, LSTM and GRU.
void register_elementwise_kernels(KernelRegistry& r) {
  elt::register_unary_kernels(r);
  elt::register_binary_kernels(r);
  elt::register_concat_kernels(r);
  elt::register_reduce_kernels(r);
  elt::register_resize_kernels(r);
  elt::register_rnn_kernels(r);
}

}  // namespace memplan::rt
