// Fixes every tensor's shape: user-given input shapes and dims, then ONNX's per-node inference,
// constant folding of shape computations, and our own rules for If, Loop and Scan.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace memplan {

struct ShapeOptions {
  std::map<std::string, std::vector<int64_t>> input_shapes;  // --shape NAME=1x3x224x224
  std::map<std::string, int64_t> dims;                       // --dim NAME=VALUE
  std::map<std::string, std::vector<int64_t>> bounds;        // --bound TENSOR=DIMS (largest shape)
  // --static: a tensor whose size only the run decides is an error naming the --bound that fixes
  // it, instead of a dynamic tensor allocated outside the arena.
  bool static_only = false;
};

// Parses "1x3x224x224" (also "" for a scalar); fails naming `what` on anything else.
std::vector<int64_t> parse_dims(const std::string& text, const std::string& what);

// Evaluates a node whose inputs are all constants (after its output types are inferred), or
// declines with std::nullopt. The pipeline passes the runtime's kernels (runtime/constant_evaluator.h),
// so folding covers every op memplan runs; lib/shapes itself folds only shape computations.
using ConstantEvaluator = std::function<std::optional<std::vector<Tensor>>(const Node&)>;

// After it returns, every non-constant value in every graph has a capacity in bytes (exact, or a
// checked upper bound) or is dynamic (Value::dynamic; main graph only), folded nodes are gone, and
// Ifs with a constant condition are inlined. Fails with one message listing every op ONNX does
// not know, or naming the tensor whose size cannot be fixed and the option that would fix it.
void infer_shapes(Model& model, const ShapeOptions& options, const ConstantEvaluator& evaluate = {});

}  // namespace memplan
