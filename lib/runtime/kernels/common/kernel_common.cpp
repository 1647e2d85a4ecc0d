#include "runtime/kernels/common/kernel_common.h"

#include <algorithm>

#include "memplan/error.h"

namespace memplan::rt {

std::string where(const Node& node, const KernelEnv& env) { return env.file + ": " + node.describe(); }

const Value* input_at(const Node& node, size_t i) { return i < node.inputs.size() ? node.inputs[i] : nullptr; }
const Value* output_at(const Node& node, size_t i) { return i < node.outputs.size() ? node.outputs[i] : nullptr; }

std::string check_arity(const Node& node, const KernelEnv& env, size_t min_in, size_t max_in, size_t outputs) {
  std::string at = where(node, env);
  size_t last_in = 0;  // one past the last present input
  for (size_t i = 0; i < node.inputs.size(); ++i)
    if (node.inputs[i]) last_in = i + 1;
  for (size_t i = 0; i < min_in; ++i)
    if (!input_at(node, i)) fail(at + ": input " + std::to_string(i) + " is required but missing");
  if (last_in > max_in)
    fail(at + ": has " + std::to_string(last_in) + " inputs, at most " + std::to_string(max_in) + " are allowed");
  for (size_t i = 0; i < outputs; ++i)
    if (!output_at(node, i)) fail(at + ": output " + std::to_string(i) + " is missing");
  return at;
}

uint64_t element_bound(const Value* v, const std::string& where) {
  if (!v->shape_varies && v->type.is_static()) {
    uint64_t n = 1;
    for (const Dim& d : v->type.dims)
      if (__builtin_mul_overflow(n, static_cast<uint64_t>(d.value), &n))
        fail(where + ": '" + v->name + "' has more elements than 64 bits count");
    return n;
  }
  const uint32_t size = dtype_size(v->type.dtype);
  if (size == 0 || v->capacity_bytes == 0) fail_unsupported(where + ": the size of '" + v->name + "' has no bound");
  return v->capacity_bytes / size;
}

bool broadcast_dims(int count, const int* ranks, const int64_t* const* dims, int& out_rank, int64_t* out_dims) {
  out_rank = 0;
  for (int k = 0; k < count; ++k) out_rank = std::max(out_rank, ranks[k]);
  for (int i = 0; i < out_rank; ++i) {
    int64_t out = 1;
    for (int k = 0; k < count; ++k) {
      const int at = i - (out_rank - ranks[k]);  // dim i of shape k, aligned right; 1 before its first
      const int64_t d = at >= 0 ? dims[k][at] : 1;
      if (d == 1 || d == out) continue;
      if (out != 1) return false;
      out = d;
    }
    out_dims[i] = out;
  }
  return true;
}

}  // namespace memplan::rt
