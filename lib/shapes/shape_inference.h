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

// Replaces g.nodes[index] by other nodes, in its place, and returns true; or leaves g alone and
// returns false. The pipeline rewrites while shapes flow, because what a rewrite needs is known
// only then: an If whose condition has just folded is replaced by its branch, a function op with
// no kernel runs as its body. Shape inference then infers the nodes that now stand there.
using NodeRewriter = std::function<bool(Graph& g, size_t index)>;

// What the pipeline lends shape inference (lib/shapes depends on neither the kernels nor the passes).
struct ShapeHooks {
  ConstantEvaluator evaluate;
  NodeRewriter rewrite;
};

// After it returns, every non-constant value in every graph has a capacity in bytes (exact, or a
// checked upper bound) or is dynamic (Value::dynamic), and folded nodes are gone. Fails with one
// message listing every op ONNX does not know, or naming the tensor whose size cannot be fixed and
// the option that would fix it.
void infer_shapes(Model& model, const ShapeOptions& options, const ShapeHooks& hooks = {});

}  // namespace memplan
