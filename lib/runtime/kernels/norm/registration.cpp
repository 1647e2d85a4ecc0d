// The norm family: plain C++ normalizations over some of the input's axes: LayerNormalization,
// InstanceNormalization and MeanVarianceNormalization. (BatchNormalization is dnnl/'s; it hands
// training-mode nodes to make_batch_norm_training here.)
#include "runtime/kernel_registry.h"
#include "runtime/kernels/norm/factories.h"

namespace memplan::rt {

void register_norm_kernels(KernelRegistry& r) {
  using namespace norm;
  r.add("LayerNormalization", make_layer_norm, norm_accepts);
  r.add("InstanceNormalization", make_instance_norm);
  r.add("MeanVarianceNormalization", make_mean_variance_norm, norm_accepts);
  r.add("GroupNormalization", make_group_norm);
  r.add("RMSNormalization", make_rms_norm);
  r.add("RotaryEmbedding", make_rotary_embedding);
  r.add("Attention", make_attention);
}

}  // namespace memplan::rt
