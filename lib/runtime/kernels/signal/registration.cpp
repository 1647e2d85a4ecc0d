// The signal family, plain C++: the window functions of signal processing (HannWindow,
// HammingWindow, BlackmanWindow), the Fourier transforms DFT and STFT (signal/fft.h: radix-2, or
// Bluestein's for other lengths) and MelWeightMatrix.
#include "runtime/kernel_registry.h"
#include "runtime/kernels/signal/factories.h"

namespace memplan::rt {

void register_signal_kernels(KernelRegistry& r) {
  for (const char* op : {"HannWindow", "HammingWindow", "BlackmanWindow"})
    r.add(op, shape::make_window, shape::window_accepts);
  r.add("DFT", signal::make_dft);
  r.add("STFT", signal::make_stft);
  r.add("MelWeightMatrix", signal::make_mel_weight_matrix);
}

}  // namespace memplan::rt
