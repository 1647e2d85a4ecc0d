// Kernels of this group are not registered yet; the runtime issue adds them.
#include "runtime/kernel_registry.h"

namespace memplan::rt {

void register_shape_kernels(KernelRegistry&) {}

}  // namespace memplan::rt
