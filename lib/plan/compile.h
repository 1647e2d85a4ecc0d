// The compile pipeline: import -> shapes -> plan -> verify.
#pragma once

#include <string>

#include "ir/graph.h"
#include "plan/planner.h"
#include "plan_file.pb.h"
#include "shapes/shape_inference.h"

namespace memplan {

struct Compiled {
  Model model;
  planfile::Plan plan;
};

// Imports the model, fixes its shapes and applies the graph passes (If folding, Conv fusions):
// the IR every later stage (kernels, plan, verifier, runtime) sees.
Model prepare_model(const std::string& path, const ShapeOptions& shapes);
// The same on a model already imported.
void prepare_model(Model& model, const ShapeOptions& shapes);

// Imports the model, fixes shapes, plans and verifies. The plan records the model's sha256 and
// the shape options, so a runtime can refuse it for another model or other shapes.
Compiled compile_model(const std::string& path, const ShapeOptions& shapes, const PlanOptions& planning);

// Plans a model whose shapes are fixed, records its identity and the shape options, verifies.
planfile::Plan plan_and_verify(const Model& model, const ShapeOptions& shapes, const PlanOptions& planning);

// The shape options a plan was made with.
ShapeOptions shape_options_of(const planfile::Plan& plan);

// Imports the model a plan was made for, with the plan's own shape options, and checks identity.
Model load_model_for_plan(const std::string& model_path, const planfile::Plan& plan);

}  // namespace memplan
