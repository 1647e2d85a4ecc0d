// The loss family: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss, plain C++.
#include "runtime/kernel_registry.h"
#include "runtime/kernels/loss/factories.h"

namespace memplan::rt {

void register_loss_kernels(KernelRegistry& r) {
  r.add("NegativeLogLikelihoodLoss", norm::make_nll_loss, norm::loss_accepts);
  r.add("SoftmaxCrossEntropyLoss", norm::make_softmax_cross_entropy, norm::loss_accepts);
}

}  // namespace memplan::rt
