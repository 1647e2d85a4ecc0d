// Denormal floats flushed to zero while a session runs (x86's FTZ and DAZ bits). On Intel cores
// an operation whose input or result is denormal (below 1.2e-38) takes a microcode assist of
// about a hundred cycles: a Softmax whose exponentials underflow into that range, or weights
// decayed into it, then runs many times its time. (AMD's Zen 4, where memplan is measured, handles
// them at full speed: 12 Softmaxes of 12 x 197 x 197 with 196 denormal outputs a row, 3.6 ms
// either way.) Such values are below any tolerance an inference is checked at; TensorFlow and
// OpenVINO flush them the same way. SessionOptions::flush_denormals turns it off.
#pragma once

namespace memplan::rt {

class FlushDenormals {
 public:
  // This thread flushes (`on`) or keeps denormals until the scope ends; the OpenMP workers of its
  // team of `threads` (those the run's primitives use) from then on. The workers are set only
  // when that changes, once per calling thread and team size while every session agrees: a
  // parallel region costs more than the run of a small model.
  FlushDenormals(bool on, int threads);
  ~FlushDenormals();
  FlushDenormals(const FlushDenormals&) = delete;
  FlushDenormals& operator=(const FlushDenormals&) = delete;

 private:
  bool restore_ = false;
  unsigned saved_ = 0;
};

// Whether the calling thread flushes denormals now (for tests).
bool flushes_denormals();

}  // namespace memplan::rt
