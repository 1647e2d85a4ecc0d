#include "runtime/denormals.h"

#include <omp.h>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

namespace memplan::rt {
namespace {

#if defined(__x86_64__) || defined(__i386__)
constexpr unsigned kFlushBits = 0x8040;  // MXCSR's flush-to-zero (bit 15) and denormals-are-zero (bit 6)
unsigned control() { return _mm_getcsr(); }
void set_control(unsigned bits) { _mm_setcsr(bits); }
#else
constexpr unsigned kFlushBits = 0;  // elsewhere a no-op: denormals stay
unsigned control() { return 0; }
void set_control(unsigned) {}
#endif

// Per calling thread (each has a team of its own): how many of its workers were last set, and
// whether to flush.
thread_local int workers_set = 0;
thread_local bool workers_flush = false;

unsigned with_flush(unsigned bits, bool on) { return on ? bits | kFlushBits : bits & ~kFlushBits; }

}  // namespace

FlushDenormals::FlushDenormals(bool on, int threads) {
  if (kFlushBits == 0) return;
  saved_ = control();
  restore_ = with_flush(saved_, on) != saved_;
  if (restore_) set_control(with_flush(saved_, on));
  if (threads > 1 && (threads > workers_set || workers_flush != on)) {
#pragma omp parallel num_threads(threads)
    set_control(with_flush(control(), on));
    workers_set = threads;
    workers_flush = on;
  }
}

FlushDenormals::~FlushDenormals() {
  if (restore_) set_control(saved_);
}

bool flushes_denormals() { return kFlushBits != 0 && (control() & kFlushBits) == kFlushBits; }

}  // namespace memplan::rt
