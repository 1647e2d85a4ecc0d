// The factory of the rnn family (rnn/rnn_kernels.cpp), for rnn/registration.cpp.
#pragma once

#include <memory>

#include "runtime/kernel.h"

namespace memplan::rt::elt {

std::unique_ptr<Kernel> make_rnn(const Node& n, const KernelEnv& env);  // RNN LSTM GRU

}  // namespace memplan::rt::elt
