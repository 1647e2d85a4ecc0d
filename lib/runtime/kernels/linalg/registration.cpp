// The linalg family: plain C++ ops on matrices (the last two axes, batched): Trilu, EyeLike and
// Det; and Einsum over any labelled axes.
#include "runtime/kernel_registry.h"
#include "runtime/kernels/linalg/factories.h"

namespace memplan::rt {

void register_linalg_kernels(KernelRegistry& r) {
  using namespace norm;
  r.add("Trilu", make_trilu);
  r.add("EyeLike", make_eye_like);
  r.add("Det", make_det);
  r.add("Einsum", make_einsum);
}

}  // namespace memplan::rt
