// The factory of the signal family (signal/signal_window.cpp), for signal/registration.cpp.
#pragma once

#include <memory>

#include "runtime/kernel.h"

namespace memplan::rt::shape {

std::unique_ptr<Kernel> make_window(const Node& n, const KernelEnv& env);  // HannWindow HammingWindow BlackmanWindow
// Whether make_window takes the node (KernelAccepts): output_datatype not float16 or bfloat16.
bool window_accepts(const Node& n);

}  // namespace memplan::rt::shape
