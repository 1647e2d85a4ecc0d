// memplan compile MODEL [--shape NAME=DIMS]... [--dim NAME=VALUE]... [--bound NAME=DIMS]...
//                       [--strategy S] [--align N] [-o OUT.mplan] [--report text|json] [--svg FILE] [--summary]
#include <iostream>

#include "commands.h"
#include "memplan/error.h"
#include "onnx/opset_adapter.h"
#include "pipeline/compile_pipeline.h"
#include "pipeline/lean_kernels.h"
#include "plan/plan_file.h"
#include "report/plan_report.h"
#include "report/plan_svg.h"
#include "report/summary.h"
#include "util/peak_rss.h"
#include "shape_options.h"

namespace memplan::cli {

namespace {
struct CompileArgs {
  std::string model, output, report = "text", svg, strategy = "auto";
  uint64_t align = 64;
  std::string prefer = "balanced";
  double tuning_seconds = 1.5;
  uint64_t max_arena = 0;
  bool summary = false, no_share = false, external_inputs = false, fail_on_ref = false;
  ShapeArgs shapes;
};
}  // namespace

void register_compile(CLI::App& app) {
  auto args = std::make_shared<CompileArgs>();
  CLI::App* sub = app.add_subcommand("compile", "Import a model, fix its shapes, plan its memory, print the report");
  sub->add_option("model", args->model, "The .onnx file")->required();
  sub->add_option("-o,--output", args->output, "Write the plan to this .mplan file");
  add_shape_options(*sub, args->shapes);
  sub->add_option("--strategy", args->strategy, "naive, best-fit, greedy-by-size, greedy-by-breadth or auto")
      ->check(CLI::IsMember({"naive", "best-fit", "greedy-by-size", "greedy-by-breadth", "auto"}));
  sub->add_option("--align", args->align, "Alignment of every buffer in bytes (a power of two)");
  sub->add_flag("--no-share", args->no_share, "Give every tensor its own bytes: no views, nothing written in place");
  sub->add_option("--prefer", args->prefer,
                  "balanced (default: a leaner kernel where its scratchpad sets the peak and costs at most 1.25x "
                  "the time, or more while the leaner kernels add at most 2% of the model's time), memory (leaner "
                  "whatever the time; oneDNN's layouts or plain tensors, whichever plans the smaller arena) or speed")
      ->check(CLI::IsMember({"balanced", "memory", "speed"}));
  sub->add_option("--tuning-seconds", args->tuning_seconds,
                  "Most wall-clock seconds balanced spends timing leaner kernels against the fastest (default 1.5; "
                  "it first spends up to half of it timing kernels that reorder both ways against their plain "
                  "variants); a candidate whose estimated cost is past what is left is never run");
  sub->add_option("--max-arena", args->max_arena, "Fail unless the arena fits in this many bytes");
  sub->add_flag("--external-inputs", args->external_inputs,
                "Plan no arena bytes for the inputs: each run reads them from the caller's buffers (zero copy)");
  sub->add_flag("--fail-on-ref", args->fail_on_ref,
                "Fail (exit 3) when a node would run on one of oneDNN's reference (ref:) kernels, naming each");
  sub->add_option("--report", args->report, "Report format: text or json")->check(CLI::IsMember({"text", "json"}));
  sub->add_option("--svg", args->svg, "Draw the plan into this SVG file");
  sub->add_flag("--summary", args->summary, "Also print the model summary: graphs, ops, captures, tensors");
  add_action(sub, [args] {
    PlanOptions planning;
    planning.strategy = *plan::parse_strategy(args->strategy);
    planning.alignment = args->align;
    planning.share_storage = !args->no_share;
    planning.prefer = *parse_preference(args->prefer);
    planning.tuning_seconds = args->tuning_seconds;
    planning.max_arena = args->max_arena;
    planning.external_inputs = args->external_inputs;
    planning.fail_on_reference_kernels = args->fail_on_ref;
    // A model with ops memplan cannot run still gets its plan, with a warning.
    const Compilation c =
        compile_model(args->model, to_shape_options(args->shapes), planning, OnUnsupported::Warn);
    if (args->summary) std::cout << model_summary(c.model);
    if (!args->output.empty()) write_plan_file(c.plan, args->output);
    if (!args->svg.empty()) write_file_atomically(args->svg, plan_svg(c.plan));
    const std::string rss = std::to_string(process_peak_rss_bytes());
    std::cout << (args->report == "json" ? plan_report_json(c.plan, "\"peak_rss_bytes\": " + rss)
                                         : plan_report_text(c.plan) + "process peak resident memory: " + rss + " bytes\n");
    if (!args->output.empty() && args->report == "text") std::cout << "plan written to " << args->output << "\n";
  });
}

void register_verify(CLI::App& app) {
  auto plan_path = std::make_shared<std::string>();
  auto model_path = std::make_shared<std::string>();
  CLI::App* sub = app.add_subcommand("verify", "Check a plan against its model without trusting the planner");
  sub->add_option("plan", *plan_path, "The .mplan file")->required();
  sub->add_option("model", *model_path, "The .onnx file (default: the path recorded in the plan)");
  add_action(sub, [plan_path, model_path] {
    MemoryPlan plan = read_plan_file(*plan_path);
    const std::string model_file = model_path->empty() ? plan.model_path : *model_path;
    // The whole load: identity, shapes, kernels on this machine (their scratchpads), the verifier.
    const Compilation c = load_compilation(model_file, std::move(plan), *plan_path, OnUnsupported::Warn);
    std::cout << *plan_path << ": OK (" << c.plan.arena_bytes << " bytes arena, " << c.plan.graphs.size()
              << " graphs verified against " << model_file << ")\n";
  });
}

void register_inspect(CLI::App& app) {
  auto plan_path = std::make_shared<std::string>();
  auto report = std::make_shared<std::string>("text");
  CLI::App* sub = app.add_subcommand("inspect", "Print the memory report of a plan file");
  sub->add_option("plan", *plan_path, "The .mplan file")->required();
  sub->add_option("--report", *report, "Report format: text or json")->check(CLI::IsMember({"text", "json"}));
  add_action(sub, [plan_path, report] {
    const MemoryPlan plan = read_plan_file(*plan_path);
    std::cout << (*report == "json" ? plan_report_json(plan) : plan_report_text(plan));
  });
}

void register_opsets(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("opsets", "Print how each op version of ai.onnx opsets 18-23 runs (docs/OPSETS.md)");
  add_action(sub, [] { std::cout << opset_rules_markdown(); });
}

}  // namespace memplan::cli
