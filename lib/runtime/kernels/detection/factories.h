// The factories of the detection family (detection/*.cpp), for detection/registration.cpp.
#pragma once

#include <memory>

#include "runtime/kernel.h"

namespace memplan::rt::shape {

// non_max_suppression.cpp
std::unique_ptr<Kernel> make_non_max_suppression(const Node& n, const KernelEnv& env);
// roi_align.cpp
std::unique_ptr<Kernel> make_roi_align(const Node& n, const KernelEnv& env);

}  // namespace memplan::rt::shape
