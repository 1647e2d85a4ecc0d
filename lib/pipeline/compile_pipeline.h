// The compile pipeline, the one that CompiledModel, the CLI and the tests all run:
//
//   import -> shapes (constants folded by the runtime's kernels; an If whose condition folds is
//             replaced by its branch, a function op with no kernel by its body, as shapes flow)
//          -> passes (no-ops dropped, Conv fusions, channel-blocked layouts)
//          -> kernel selection (oneDNN primitives made: real layouts and scratchpads)
//          -> plan -> verify
#pragma once

#include <memory>
#include <string>
#include <unordered_map>

#include "memplan/error.h"
#include "ir/graph.h"
#include "plan/planner.h"
#include "runtime/dnnl_context.h"
#include "runtime/kernel_selection.h"
#include "shapes/shape_inference.h"

namespace memplan {

struct Compilation {
  std::unique_ptr<rt::DnnlContext> dnnl;  // the kernels point at it: first in, last out
  Model model;
  KernelSelection kernels;
  MemoryPlan plan;
  // The scratchpad bytes of the kernel first made for each node that now runs a leaner variant
  // (pipeline/lean_kernels), for the report: what the variant saved.
  std::unordered_map<const Node*, uint64_t> fastest_scratchpad;
};

// Whether a model with ops memplan cannot run still gets a plan (`memplan compile` warns and
// plans the rest; CompiledModel refuses it).
enum class OnUnsupported { Fail, Warn };

// import -> shapes -> passes: the IR every later stage sees; `patches` are made after the fusions
// (passes/patch_regions), before layouts are assigned; `plain_layouts` leaves every float tensor
// row-major (MemoryPlan::plain_layouts).
Model prepare_model(const std::string& path, const ShapeOptions& shapes, const std::vector<PatchRegion>& patches = {},
                    bool plain_layouts = false);
void prepare_model(Model& model, const ShapeOptions& shapes, const std::vector<PatchRegion>& patches = {},
                   bool plain_layouts = false);

// The hooks prepare_model lends shape inference: the runtime's kernels for folding, and the
// rewrites (an If whose condition folds is inlined, a function op with no kernel expanded).
ShapeHooks pipeline_shape_hooks(Model& model);
NodeRewriter pipeline_rewrites(Model& model);

// The whole pipeline. `planning.scratchpad_bytes` is the kernels' (whatever the caller set).
Compilation compile_model(const std::string& path, const ShapeOptions& shapes, PlanOptions planning,
                          OnUnsupported unsupported = OnUnsupported::Fail);

// What load_compilation throws when a kernel made on this machine, at this thread count, needs
// more scratchpad than the plan has room for (more threads than the plan was made for, another
// CPU): the caller may make the kernels again for the thread count the plan was made with.
struct ScratchpadMisfit : Error {
  using Error::Error;
};

// A plan made earlier, with the model it was made for: the model's identity is checked, it is
// prepared with the plan's own shape options, kernels are selected on this machine, the plan is
// verified, and every kernel's scratchpad must have room in it. `plan_path` is for messages.
Compilation load_compilation(const std::string& model_path, MemoryPlan plan, const std::string& plan_path,
                             OnUnsupported unsupported = OnUnsupported::Fail);

}  // namespace memplan
