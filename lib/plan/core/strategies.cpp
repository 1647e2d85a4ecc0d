#include "plan/core/strategies.h"

#include <array>
#include <utility>

namespace memplan::plan {
namespace {

constexpr std::array<std::pair<Strategy, std::string_view>, 5> kNames{{
    {Strategy::Naive, "naive"},
    {Strategy::BestFit, "best-fit"},
    {Strategy::GreedyBySize, "greedy-by-size"},
    {Strategy::GreedyByBreadth, "greedy-by-breadth"},
    {Strategy::Auto, "auto"},
}};

}  // namespace

std::string_view strategy_name(Strategy strategy) {
  for (const auto& [s, name] : kNames)
    if (s == strategy) return name;
  return "unknown";
}

std::optional<Strategy> parse_strategy(std::string_view name) {
  for (const auto& [s, n] : kNames)
    if (n == name) return s;
  return std::nullopt;
}

const std::vector<Strategy>& concrete_strategies() {
  static const std::vector<Strategy> all{Strategy::Naive, Strategy::BestFit, Strategy::GreedyBySize,
                                         Strategy::GreedyByBreadth};
  return all;
}

Placement plan(Strategy strategy, std::span<const BufferRequest> requests, uint64_t align) {
  switch (strategy) {
    case Strategy::Naive: return plan_naive(requests, align);
    case Strategy::BestFit: return plan_best_fit(requests, align);
    case Strategy::GreedyBySize: return plan_greedy_by_size(requests, align);
    case Strategy::GreedyByBreadth: return plan_greedy_by_breadth(requests, align);
    case Strategy::Auto: break;
  }
  std::optional<Placement> best;
  for (Strategy s : concrete_strategies()) {
    Placement candidate = plan(s, requests, align);
    if (!best || candidate.frame_bytes < best->frame_bytes) best = std::move(candidate);  // ties: keep the earlier
  }
  return std::move(*best);
}

}  // namespace memplan::plan
