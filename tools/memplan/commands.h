// The subcommands of the memplan CLI.
#pragma once

#include <CLI/CLI.hpp>

namespace memplan::cli {

constexpr int kExitUsage = 1;  // bad command line (CLI11 prints the reason)

void register_compile(CLI::App& app);

// Runs whichever subcommand was parsed; maps memplan::Error kinds to exit codes.
int run_selected(CLI::App& app, bool verbose);

}  // namespace memplan::cli
