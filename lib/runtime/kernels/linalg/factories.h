// The factories of the linalg family (linalg/*.cpp), for linalg/registration.cpp.
#pragma once

#include <memory>

#include "runtime/kernel.h"

namespace memplan::rt::norm {

using Factory = std::unique_ptr<Kernel>;

// matrix_kernels.cpp
std::unique_ptr<Kernel> make_trilu(const Node& n, const KernelEnv& env);
std::unique_ptr<Kernel> make_eye_like(const Node& n, const KernelEnv& env);
std::unique_ptr<Kernel> make_det(const Node& n, const KernelEnv& env);
// einsum_kernel.cpp
std::unique_ptr<Kernel> make_einsum(const Node& n, const KernelEnv& env);
// deform_conv.cpp
std::unique_ptr<Kernel> make_deform_conv(const Node& n, const KernelEnv& env);

}  // namespace memplan::rt::norm
