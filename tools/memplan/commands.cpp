#include "commands.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <functional>
#include <iostream>
#include <map>

#include "memplan/error.h"

namespace memplan::cli {
namespace {

std::map<const CLI::App*, std::function<void()>>& actions() {
  static std::map<const CLI::App*, std::function<void()>> a;
  return a;
}

// The remedies of an error as this CLI's flags: " (--bound y=<dims>, or drop --static)".
std::string cli_remedies(const std::vector<Remedy>& remedies) {
  std::string out;
  for (const Remedy& r : remedies) {
    out += out.empty() ? " (" : ", or ";
    switch (r.option) {
      case Remedy::Option::InputShapes: out += "--shape " + one_line(r.name) + "=" + r.value; break;
      case Remedy::Option::Dims: out += "--dim " + one_line(r.name) + "=" + r.value; break;
      case Remedy::Option::Bounds: out += "--bound " + one_line(r.name) + "=" + r.value; break;
      case Remedy::Option::StaticOnly: out += "drop --static"; break;
    }
  }
  return out.empty() ? out : out + ")";
}

}  // namespace

void add_action(CLI::App* sub, std::function<void()> action) { actions()[sub] = std::move(action); }

int run_selected(CLI::App& app, bool verbose) {
  auto logger = spdlog::stderr_color_mt("memplan");
  spdlog::set_default_logger(logger);
  spdlog::set_level(verbose ? spdlog::level::debug : spdlog::level::warn);
  spdlog::set_pattern("memplan: %l: %v");
  for (const CLI::App* sub : app.get_subcommands()) {
    auto it = actions().find(sub);
    if (it == actions().end()) continue;
    try {
      it->second();
      return 0;
    } catch (const memplan::Error& e) {
      std::cerr << "memplan: error: " << e.message() << cli_remedies(e.remedies()) << "\n";
      return static_cast<int>(e.kind());
    } catch (const std::bad_alloc&) {
      std::cerr << "memplan: error: out of memory\n";
      return static_cast<int>(ErrorKind::Internal);
    } catch (const std::exception& e) {
      std::cerr << "memplan: error: internal error: " << e.what() << "\n";
      return static_cast<int>(ErrorKind::Internal);
    }
  }
  return kExitUsage;
}

}  // namespace memplan::cli
