// The detection family: the box ops of object detectors, plain C++: NonMaxSuppression and
// RoiAlign.
#include "runtime/kernel_registry.h"
#include "runtime/kernels/detection/factories.h"

namespace memplan::rt {

void register_detection_kernels(KernelRegistry& r) {
  r.add("NonMaxSuppression", shape::make_non_max_suppression);
  r.add("RoiAlign", shape::make_roi_align);
}

}  // namespace memplan::rt
