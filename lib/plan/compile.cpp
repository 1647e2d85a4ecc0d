#include "plan/compile.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include "memplan/error.h"
#include "onnx/importer.h"
#include "passes/assign_layouts.h"
#include "passes/drop_noops.h"
#include "passes/fuse_conv.h"
#include "plan/verifier.h"
#include "report/plan_report.h"
#include "runtime/constant_evaluator.h"

namespace memplan {
namespace {

void record_shape_options(const ShapeOptions& s, planfile::Plan& plan) {
  for (const auto& [name, dims] : s.input_shapes) {
    auto* nd = plan.add_input_shapes();
    nd->set_name(name);
    for (int64_t d : dims) nd->add_dims(d);
  }
  for (const auto& [name, value] : s.dims) (*plan.mutable_dims())[name] = value;
  plan.set_static_only(s.static_only);
  for (const auto& [name, dims] : s.bounds) {
    auto* nd = plan.add_bounds();
    nd->set_name(name);
    for (int64_t d : dims) nd->add_dims(d);
  }
}

// A plan can be valid and still not fit this machine: say so when it is made, not only when a
// session fails to allocate it.
void warn_if_larger_than_memory(const planfile::Plan& plan) {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return;
  const auto memory = static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
  if (plan.arena_bytes() > memory)
    spdlog::warn("{}: the arena needs {} bytes, more than this machine's {} bytes of memory; the peak is at {}",
                 plan.model_path(), plan.arena_bytes(), memory, plan_peak_summary(plan));
}

}  // namespace

ShapeOptions shape_options_of(const planfile::Plan& plan) {
  ShapeOptions s;
  for (const auto& nd : plan.input_shapes()) s.input_shapes[nd.name()].assign(nd.dims().begin(), nd.dims().end());
  for (const auto& [name, value] : plan.dims()) s.dims[name] = value;
  for (const auto& nd : plan.bounds()) s.bounds[nd.name()].assign(nd.dims().begin(), nd.dims().end());
  s.static_only = plan.static_only();
  return s;
}

planfile::Plan plan_and_verify(const Model& model, const ShapeOptions& shapes, const PlanOptions& planning) {
  planfile::Plan plan = plan_memory(model, planning);
  plan.set_model_sha256(model.sha256);
  plan.set_model_path(model.path);
  record_shape_options(shapes, plan);
  verify_plan(model, plan);
  spdlog::debug("plan verified: arena {} bytes", plan.arena_bytes());
  warn_if_larger_than_memory(plan);
  return plan;
}

void prepare_model(Model& model, const ShapeOptions& shapes) {
  infer_shapes(model, shapes, [&model](const Node& n) { return evaluate_with_kernel(n, model.path); });
  spdlog::debug("shapes fixed");
  const int dropped = drop_noops(model);
  spdlog::debug("{} no-op nodes removed", dropped);
  const int fused = fuse_conv(model);
  spdlog::debug("Conv fusions removed {} nodes", fused);
  const int blocked = assign_layouts(model, preferred_channel_block());
  spdlog::debug("{} tensors channel-blocked", blocked);
}

Model prepare_model(const std::string& path, const ShapeOptions& shapes) {
  Model model = import_model(path);
  spdlog::debug("imported {}", path);
  prepare_model(model, shapes);
  return model;
}

Compiled compile_model(const std::string& path, const ShapeOptions& shapes, const PlanOptions& planning) {
  Compiled c{prepare_model(path, shapes), {}};
  c.plan = plan_and_verify(c.model, shapes, planning);
  return c;
}

Model load_model_for_plan(const std::string& model_path, const planfile::Plan& plan) {
  Model model = import_model(model_path);
  if (model.sha256 != plan.model_sha256())
    fail(model_path + ": the plan was made for another model (sha256 " + plan.model_sha256().substr(0, 12) +
         "..., this file " + model.sha256.substr(0, 12) + "...)");
  prepare_model(model, shape_options_of(plan));
  return model;
}

}  // namespace memplan
