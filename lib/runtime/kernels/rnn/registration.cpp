// The rnn family: the recurrent layers RNN, LSTM and GRU, on oneDNN's RNN primitives.
#include "runtime/kernel_registry.h"
#include "runtime/kernels/rnn/factories.h"

namespace memplan::rt {

void register_rnn_kernels(KernelRegistry& r) {
  r.add("RNN", elt::make_rnn);
  r.add("LSTM", elt::make_rnn);
  r.add("GRU", elt::make_rnn);
}

}  // namespace memplan::rt
