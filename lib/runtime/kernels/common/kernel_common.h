// What every kernel family shares, whichever helpers it builds on (shape_common.h,
// elementwise_common.h, dnnl_common.h): the prefix of messages about a node, its inputs and
// outputs with ONNX's omitted optional ones, the arity check, numpy broadcasting of dims and the
// row-major multi-index step. Private to lib/runtime/kernels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "runtime/kernel.h"

namespace memplan::rt {

// "model.onnx: Conv node 'conv1'": the prefix of every message about `node`.
std::string where(const Node& node, const KernelEnv& env);

// Input (output) i, or null when it is omitted (an empty name) or past the end of the list.
const Value* input_at(const Node& node, size_t i);
const Value* output_at(const Node& node, size_t i);

// Checks the node's inputs and outputs as ONNX gives them: an omitted optional input is a null
// entry, and omitted trailing ones may be absent from the list altogether. Inputs 0 .. min_in - 1
// must be present and none past max_in - 1 may be (omitted ones there are fine); outputs
// 0 .. outputs - 1 must be present. Returns where(node, env).
std::string check_arity(const Node& node, const KernelEnv& env, size_t min_in, size_t max_in, size_t outputs = 1);

// Elements a value's buffer can hold at run time: its static element count, else its capacity
// over the element size. Fails (Unsupported) naming the value when neither is known: kernels size
// their scratchpads with it.
uint64_t element_bound(const Value* v, const std::string& where);

// Numpy broadcasting of `count` shapes (ranks[k] dims at dims[k]), aligned right: out_rank is the
// largest rank and each out_dims[i] the one size other than 1 that the shapes have there (1 if
// none). False when two shapes have different sizes other than 1 at a dim. out_dims must hold
// out_rank values.
bool broadcast_dims(int count, const int* ranks, const int64_t* const* dims, int& out_rank, int64_t* out_dims);

// Steps the row-major multi-index `idx` (digits 0 .. rank - 1, the last fastest) over `dims` to
// the next index: the last digit goes up by one, and a digit that reaches its dim goes back to 0
// and carries into the one before. moved(d, delta) is told, after the change, of each digit that
// changed and by how much (+1, or 1 - dims[d] for one that wrapped), for callers that keep
// offsets in step with the index (offset += stride[d] * delta). Returns false, with every digit
// back at 0, after the last index.
template <typename Index, typename Dims, typename Moved>
bool next_index(Index& idx, const Dims& dims, int rank, Moved&& moved) {
  for (int d = rank - 1; d >= 0; --d) {
    if (++idx[d] < dims[d]) {
      moved(d, int64_t{1});
      return true;
    }
    idx[d] = 0;
    moved(d, int64_t{1} - dims[d]);
  }
  return false;
}

template <typename Index, typename Dims>
bool next_index(Index& idx, const Dims& dims, int rank) {
  return next_index(idx, dims, rank, [](int, int64_t) {});
}

// A run of fewer than 32 bytes, by fixed-size moves inline.
inline void copy_short(std::byte* dst, const std::byte* src, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) std::memcpy(dst + i, src + i, 8);
  if (n - i >= 4) std::memcpy(dst + i, src + i, 4), i += 4;
  if (n - i >= 2) std::memcpy(dst + i, src + i, 2), i += 2;
  if (n - i >= 1) dst[i] = src[i];
}

// memcpy for runs that may be a few bytes (a box's 2 or 4 coordinates, sliced or concatenated
// 4420 times in a detector's decoding), where a call to libc's memcpy per run costs more than the
// bytes.
inline void copy_run(std::byte* dst, const std::byte* src, size_t n) {
  if (n < 32) copy_short(dst, src, n);
  else std::memcpy(dst, src, n);
}

}  // namespace memplan::rt
