// memplan: the command-line front end. Each subcommand is a thin layer over the library.
#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <iostream>

#include "commands.h"
#include "memplan/error.h"

int main(int argc, char** argv) {
  CLI::App app{"memplan: an ONNX compiler for CPU inference in one planned memory buffer"};
  app.set_version_flag("--version", std::string("memplan ") + MEMPLAN_VERSION);
  app.require_subcommand(1);
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "Log what each stage does (to stderr)");

  memplan::cli::register_compile(app);
  memplan::cli::register_verify(app);
  memplan::cli::register_inspect(app);
  memplan::cli::register_run(app);
  memplan::cli::register_opsets(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : memplan::cli::kExitUsage;
  }
  return memplan::cli::run_selected(app, verbose);
}
