// The factories of the resize family (resize/*.cpp), for resize/registration.cpp.
#pragma once

#include <memory>

#include "runtime/kernel.h"

namespace memplan::rt::elt {

// resize_kernels.cpp
std::unique_ptr<Kernel> make_resize(const Node& n, const KernelEnv& env);  // Resize Upsample

}  // namespace memplan::rt::elt

namespace memplan::rt::shape {

// grid_sample.cpp
std::unique_ptr<Kernel> make_grid_sample(const Node& n, const KernelEnv& env);

}  // namespace memplan::rt::shape
