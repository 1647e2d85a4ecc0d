// Hand-built models planned with alias rules the test types in (instead of the kernels'), so a
// test pins down what the planner does with each rule. Every plan a test looks at is also one the
// verifier accepts.
#pragma once

#include "pipeline/compile_pipeline.h"
#include "plan/planner.h"
#include "plan/verifier.h"
#include "support/model_builder.h"

namespace memplan::test {

// Imported and prepared (shapes, folding) as the pipeline does before planning.
inline Model prepared(const ModelBuilder& b) {
  Model m = b.import();
  prepare_model(m, {});
  return m;
}

// A [1, 16] float: one 64-byte alignment unit.
inline constexpr uint64_t kUnitBytes = 4 * 16;

// Reshape is a view; Add and Relu may write over input 0, as oneDNN's binary and eltwise kernels
// do; nothing else shares (Mul may not write in place).
inline plan::NodeAliasing view_and_in_place_rules(const Node& n) {
  plan::NodeAliasing a;
  if (n.op_type == "Reshape") a.view_of = 0;
  if (n.op_type == "Add" || n.op_type == "Relu") a.in_place = {0};
  return a;
}

inline MemoryPlan typed_plan(const Model& m, const plan::AliasRules& rules) {
  PlanOptions o;
  o.aliasing = rules;
  MemoryPlan p = plan_memory(m, o);
  verify_plan(m, p);
  return p;
}

}  // namespace memplan::test
