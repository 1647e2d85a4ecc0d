// A MatMul that reads an operand through a permutation of another tensor's axes, as a Transpose
// node would have written it (passes/fold_transposes): the kernel describes the operand with that
// tensor's strides, permuted, instead of reading a transposed copy. One definition of the
// attributes for the pass that writes them and the kernel that reads them.
//
//   memplan_permute_a, memplan_permute_b  ints: operand 0 (or 1) is input 0 (or 1) with its axes
//                                         permuted, as Transpose's `perm`: axis i of the operand
//                                         is axis perm[i] of the input.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/graph.h"

namespace memplan {

inline constexpr const char* kPermuteAttrs[2] = {"memplan_permute_a", "memplan_permute_b"};

// Operand `input`'s permutation (0: A, 1: B); nullopt when the node reads the input as it is.
inline std::optional<std::vector<int64_t>> operand_permutation(const Node& node, size_t input) {
  if (input > 1 || !node.attr(kPermuteAttrs[input])) return std::nullopt;
  return node.attr_ints(kPermuteAttrs[input]);
}

}  // namespace memplan
