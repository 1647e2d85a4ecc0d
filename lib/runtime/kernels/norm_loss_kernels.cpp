// Registers the normalization, loss and matrix-structure kernels (norm_loss.h).
#include "runtime/kernels/norm_loss.h"

#include "runtime/kernel_registry.h"
#include "runtime/kernels/shape_common.h"

namespace memplan::rt {

namespace norm {

uint64_t element_bound(const Value* v, const std::string& where) {
  if (!v->shape_varies && v->type.is_static()) {
    uint64_t n = 1;
    for (const Dim& d : v->type.dims)
      if (__builtin_mul_overflow(n, static_cast<uint64_t>(d.value), &n))
        shape::fail_at(where, "'" + v->name + "' has more elements than 64 bits count");
    return n;
  }
  const uint32_t size = dtype_size(v->type.dtype);
  if (size == 0 || v->capacity_bytes == 0)
    shape::unsupported_at(where, "the size of '" + v->name + "' has no bound");
  return v->capacity_bytes / size;
}

}  // namespace norm

void register_norm_loss_kernels(KernelRegistry& r) {
  using namespace norm;
  r.add("LayerNormalization", make_layer_norm, norm_accepts);
  r.add("InstanceNormalization", make_instance_norm);
  r.add("MeanVarianceNormalization", make_mean_variance_norm, norm_accepts);
  r.add("NegativeLogLikelihoodLoss", make_nll_loss, loss_accepts);
  r.add("SoftmaxCrossEntropyLoss", make_softmax_cross_entropy, loss_accepts);
  r.add("Trilu", make_trilu);
  r.add("EyeLike", make_eye_like);
  r.add("Det", make_det);
  r.add("Einsum", make_einsum);
}

}  // namespace memplan::rt
