// The reduce family: ops that reduce axes of the input to one value, or pick elements by rank
// along an axis. Reduce* (Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare; oneDNN
// reduction where it applies), ArgMax, ArgMin, Hardmax and TopK.
#include "runtime/kernel_registry.h"
#include "runtime/kernels/reduce/factories.h"

namespace memplan::rt {

void register_reduce_kernels(KernelRegistry& r) {
  elt::add_reduce_ops(r);
  r.add("ArgMax", shape::make_arg);
  r.add("ArgMin", shape::make_arg);
  r.add("Hardmax", shape::make_hardmax);
  r.add("TopK", shape::make_topk);
}

}  // namespace memplan::rt
