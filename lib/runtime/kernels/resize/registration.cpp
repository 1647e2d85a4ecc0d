// The resize family: resampling an image at computed coordinates, plain C++. Resize and Upsample
// (scales or sizes, every coordinate transformation mode) and GridSample (coordinates given by a
// grid input).
#include "runtime/kernel_registry.h"
#include "runtime/kernels/resize/factories.h"

namespace memplan::rt {

void register_resize_kernels(KernelRegistry& r) {
  r.add("Resize", elt::make_resize);
  r.add("Upsample", elt::make_resize);
  r.add("GridSample", shape::make_grid_sample);
}

}  // namespace memplan::rt
