// The factories of the signal family (signal/*.cpp), for signal/registration.cpp.
#pragma once

#include <memory>

#include "runtime/kernel.h"

namespace memplan::rt::shape {

std::unique_ptr<Kernel> make_window(const Node& n, const KernelEnv& env);  // HannWindow HammingWindow BlackmanWindow
// Whether make_window takes the node (KernelAccepts): output_datatype not float16 or bfloat16.
bool window_accepts(const Node& n);

}  // namespace memplan::rt::shape

namespace memplan::rt::signal {

std::unique_ptr<Kernel> make_dft(const Node& n, const KernelEnv& env);   // signal_dft.cpp
std::unique_ptr<Kernel> make_stft(const Node& n, const KernelEnv& env);  // signal_dft.cpp
std::unique_ptr<Kernel> make_mel_weight_matrix(const Node& n, const KernelEnv& env);  // signal_mel.cpp

}  // namespace memplan::rt::signal
