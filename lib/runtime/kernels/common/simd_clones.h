// memplan's own hot loops are compiled for AVX-512, AVX2 and the baseline, and the CPU picks at
// load (GCC's and clang's function multiversioning). The clones must be plain functions (clang 14
// takes no templates there): each switches on what varies once and calls always-inlined
// templates, so that every loop is vectorized inside every clone.
#pragma once

#define MEMPLAN_SIMD_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#define MEMPLAN_INLINE __attribute__((always_inline)) inline

namespace memplan::rt {

// Eight floats (GCC's and clang's vector extensions: registers of the clone's ISA, AVX2's width
// in every clone), loaded from and stored to any float's address by memcpy, which both compilers
// make one unaligned move (a typedef of lower alignment: clang keeps the vector's 32 bytes, and
// UBSan flags the load; a packed struct: GCC assembles it from halves). Everything using them is
// inlined into the clones, so the compilers' warning that passing vectors changes the calling
// convention does not apply: users turn -Wpsabi off around their loops, as here.
using v8 = float __attribute__((vector_size(32)));
#if defined(__GNUC__)  // GCC and clang
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
#endif
MEMPLAN_INLINE v8 load8(const float* p) {
  v8 v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}
MEMPLAN_INLINE void store8(float* p, v8 v) { __builtin_memcpy(p, &v, sizeof v); }
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

}  // namespace memplan::rt
