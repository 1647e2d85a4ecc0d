// Compile-time kernel choice within its tuning budget (pipeline/lean_kernels), on a real
// compilation of models/tiny_mlp whose first node's kernel is replaced by a test kernel: the
// fastest holds a scratchpad that sets the arena's peak, its leaner variant none; how long each
// runs, how slow the variant says it is before it runs, and how often each ran are the test's.
#include <catch2/catch.hpp>

#include <chrono>
#include <memory>
#include <string>

#include "pipeline/compile_pipeline.h"
#include "pipeline/lean_kernels.h"

using namespace memplan;

namespace {

class TestKernel final : public rt::Kernel {
 public:
  TestKernel(uint64_t scratchpad, double seconds, double expected, int& runs)
      : scratchpad_(scratchpad), seconds_(seconds), expected_(expected), runs_(runs) {}
  // Busy, not asleep: a timing reads the wall clock, and so does this.
  void run(const rt::KernelArgs&) override {
    ++runs_;
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds_);
    while (std::chrono::steady_clock::now() < until) {
    }
  }
  uint64_t scratchpad_bytes() const override { return scratchpad_; }
  double expected_slowdown() const override { return expected_; }

 private:
  uint64_t scratchpad_;
  double seconds_, expected_;
  int& runs_;
};

constexpr uint64_t kScratchpad = uint64_t{1} << 20;  // tiny_mlp's tensors are a few KB

// A compilation whose first node runs the test kernels; `choose()` runs the choice under Balanced.
struct Choice {
  Compilation c;
  PlanOptions planning;
  const Node* node = nullptr;
  rt::Kernel* fast = nullptr;
  int fast_runs = 0, lean_runs = 0;

  Choice(double fast_seconds, double lean_seconds, double lean_expected, double budget_seconds) {
    PlanOptions speed;
    speed.prefer = KernelPreference::Speed;
    c = compile_model(std::string(MEMPLAN_SOURCE_DIR) + "/models/tiny_mlp/model.onnx", {}, speed);
    planning.scratchpad_bytes = [this](const Node& n) { return c.kernels.scratchpad_bytes(n); };
    planning.aliasing = [this](const Node& n) { return c.kernels.aliasing(n); };
    planning.tuning_seconds = budget_seconds;
    node = c.model.main->nodes.front().get();
    auto k = std::make_unique<TestKernel>(kScratchpad, fast_seconds, 1.0, fast_runs);
    k->set_leaner(std::make_unique<TestKernel>(0, lean_seconds, lean_expected, lean_runs));
    fast = k.get();
    c.kernels.kernels[node] = std::move(k);
    c.plan = plan_memory(c.model, planning);
    REQUIRE(c.plan.arena_bytes >= kScratchpad);
  }
  Choice(const Choice&) = delete;

  int choose() { return choose_lean_kernels(c, planning, KernelPreference::Balanced); }
  bool kept_fastest() const { return c.kernels.kernels.at(node).get() == fast; }
};

}  // namespace

TEST_CASE("a leaner kernel expected far slower than the model's time allows is never run", "[lean-kernels][tuning]") {
  // A plain loop expected at 50x a 1 ms kernel adds 49 ms to a model of about 1 ms.
  Choice ch(0.001, 0.05, 50.0, 1.5);
  const uint64_t arena = ch.c.plan.arena_bytes;
  CHECK(ch.choose() == 0);
  CHECK(ch.lean_runs == 0);
  CHECK(ch.kept_fastest());
  CHECK(ch.c.plan.arena_bytes == arena);
  CHECK(ch.c.plan.tuning.candidates_skipped == 1);
  CHECK(ch.c.plan.tuning.candidates_timed == 0);
}

TEST_CASE("a leaner kernel that is far slower than it said stops after its first round", "[lean-kernels][tuning]") {
  // It says 1x and takes 40x: its first run against the fastest's, and the first round's, rule it
  // out, with no more rounds.
  Choice ch(0.001, 0.04, 1.0, 1.5);
  CHECK(ch.choose() == 0);
  CHECK(ch.lean_runs == 2);
  CHECK(ch.kept_fastest());
  CHECK(ch.c.plan.tuning.candidates_timed == 1);
}

TEST_CASE("a leaner kernel whose timing would pass the tuning budget is not run", "[lean-kernels][tuning]") {
  // The fastest takes 0.1 s: two runs of each come to 0.4 s, past a 0.3 s budget.
  Choice ch(0.1, 0.1, 1.0, 0.3);
  CHECK(ch.choose() == 0);
  CHECK(ch.lean_runs == 0);
  CHECK(ch.kept_fastest());
  CHECK(ch.c.plan.tuning.candidates_skipped == 1);
  CHECK(ch.c.plan.tuning.seconds < 0.3 + 0.25);  // the one run of the fastest may pass it by its own time
}

TEST_CASE("a leaner kernel as fast as the fastest is timed within the budget and taken", "[lean-kernels][tuning]") {
  Choice ch(0.001, 0.001, 1.0, 1.5);
  const uint64_t arena = ch.c.plan.arena_bytes;
  CHECK(ch.choose() == 1);
  CHECK_FALSE(ch.kept_fastest());
  CHECK(ch.c.plan.arena_bytes + kScratchpad / 2 < arena);
  CHECK(ch.c.plan.tuning.candidates_timed == 1);
  CHECK(ch.c.plan.tuning.nodes_timed == 1);
  CHECK(ch.c.plan.tuning.budget_seconds == 1.5);
  CHECK(ch.c.plan.tuning.seconds <= 1.5);
}

TEST_CASE("a tuning budget of zero runs no kernel and takes no leaner one", "[lean-kernels][tuning]") {
  Choice ch(0.001, 0.001, 1.0, 0.0);
  CHECK(ch.choose() == 0);
  CHECK(ch.fast_runs == 0);
  CHECK(ch.lean_runs == 0);
  CHECK(ch.kept_fastest());
}
