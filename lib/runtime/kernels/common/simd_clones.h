// memplan's own hot loops are compiled for AVX-512, AVX2 and the baseline, and the CPU picks at
// load (GCC's and clang's function multiversioning). The clones must be plain functions (clang 14
// takes no templates there): each switches on what varies once and calls always-inlined
// templates, so that every loop is vectorized inside every clone.
#pragma once

#define MEMPLAN_SIMD_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#define MEMPLAN_INLINE __attribute__((always_inline)) inline
