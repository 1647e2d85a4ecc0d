// The linalg family: plain C++ ops on matrices (the last two axes, batched): Trilu, EyeLike and
// Det; Einsum over any labelled axes; and DeformConv (samples gathered into columns, then dot
// products).
#include "runtime/kernel_registry.h"
#include "runtime/kernels/linalg/factories.h"

namespace memplan::rt {

void register_linalg_kernels(KernelRegistry& r) {
  using namespace norm;
  r.add("Trilu", make_trilu);
  r.add("EyeLike", make_eye_like);
  r.add("Det", make_det);
  r.add("Einsum", make_einsum);
  r.add("DeformConv", make_deform_conv);
}

}  // namespace memplan::rt
