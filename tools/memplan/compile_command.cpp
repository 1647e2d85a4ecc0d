// memplan compile MODEL [--shape NAME=DIMS]... [--dim NAME=VALUE]... [--bound NAME=DIMS]... [-o OUT]
#include <iostream>

#include "commands.h"
#include "memplan/error.h"
#include "onnx/importer.h"
#include "report/summary.h"
#include "shape_options.h"
#include "shapes/shape_inference.h"

namespace memplan::cli {

void add_action(CLI::App* sub, std::function<void()> action);

namespace {
struct CompileArgs {
  std::string model;
  std::string output;
  ShapeArgs shapes;
};
}  // namespace

void register_compile(CLI::App& app) {
  auto args = std::make_shared<CompileArgs>();
  CLI::App* sub = app.add_subcommand("compile", "Import a model, fix its shapes, plan its memory, print the report");
  sub->add_option("model", args->model, "The .onnx file")->required()->check(CLI::ExistingFile);
  sub->add_option("-o,--output", args->output, "Write the plan to this file");
  add_shape_options(*sub, args->shapes);
  add_action(sub, [args] {
    Model model = import_model(args->model);
    infer_shapes(model, to_shape_options(args->shapes));
    std::cout << model_summary(model);
  });
}

}  // namespace memplan::cli
