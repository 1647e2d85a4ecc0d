// The discrete Fourier transform of one complex line, in double, for DFT and STFT: an iterative
// radix-2 FFT when the length is a power of two, Bluestein's chirp-z transform (a convolution by
// power-of-two FFTs) for any other length. No heap: twiddles, chirp and work buffers live in
// memory the caller gives (a kernel's scratchpad), sized by fft_scratch_bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace memplan::rt::signal {

struct Complex {
  double re = 0, im = 0;
};

// The largest transform length: beyond it Bluestein's work length (a power of two at least
// 2n - 1) and the scratchpad's byte count could overflow; no real buffer comes near.
constexpr uint64_t kMaxFftLength = uint64_t{1} << 40;

// Bytes of scratch an Fft of length n needs (n in [1, kMaxFftLength]); `up_to` gives what every
// length from 1 to n needs at most, for a kernel whose length is known only at run time.
uint64_t fft_scratch_bytes(uint64_t n, bool up_to = false);

class Fft {
 public:
  // Prepares the transform of length n (1 .. kMaxFftLength) in `scratch`, fft_scratch_bytes(n)
  // bytes aligned to 16: twiddles and, for a length not a power of two, the chirp and the
  // transformed convolution kernel. inverse: exp(+2 pi i jk / n), unnormalized.
  Fft(uint64_t n, bool inverse, std::byte* scratch);

  uint64_t size() const { return n_; }
  // The line to fill with n values before run(), which leaves their transform there:
  //   X[j] = sum_k x[k] exp(-+2 pi i j k / n).
  Complex* line() const { return line_; }
  void run() const;

 private:
  uint64_t n_ = 0;
  uint64_t m_ = 0;            // the power-of-two length the radix-2 passes run at (n, or Bluestein's)
  bool inverse_ = false;
  bool bluestein_ = false;
  Complex* twiddles_ = nullptr;  // m/2 of them: exp(-+2 pi i k / m)
  Complex* chirp_ = nullptr;     // n: exp(-+ pi i k^2 / n)
  Complex* kernel_ = nullptr;    // m: the FFT of the conjugate chirp, wrapped, over m
  Complex* line_ = nullptr;      // n (radix-2) or m (Bluestein)
};

}  // namespace memplan::rt::signal
