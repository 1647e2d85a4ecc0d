// The subcommands of the memplan CLI.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace memplan::cli {

constexpr int kExitUsage = 1;  // bad command line (CLI11 prints the reason)

void register_compile(CLI::App& app);
void register_verify(CLI::App& app);
void register_inspect(CLI::App& app);
void register_run(CLI::App& app);
void register_opsets(CLI::App& app);

// Runs `action` when `sub` is the parsed subcommand.
void add_action(CLI::App* sub, std::function<void()> action);

// Runs whichever subcommand was parsed; maps memplan::Error kinds to exit codes.
int run_selected(CLI::App& app, bool verbose);

}  // namespace memplan::cli
