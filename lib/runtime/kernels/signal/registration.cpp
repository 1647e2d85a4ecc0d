// The signal family: the window functions of signal processing, HannWindow, HammingWindow and
// BlackmanWindow, plain C++.
#include "runtime/kernel_registry.h"
#include "runtime/kernels/signal/factories.h"

namespace memplan::rt {

void register_signal_kernels(KernelRegistry& r) {
  for (const char* op : {"HannWindow", "HammingWindow", "BlackmanWindow"}) r.add(op, shape::make_window, shape::window_accepts);
}

}  // namespace memplan::rt
