// Kernel selection's timing: how a leaner kernel's slowdown is read from rounds that ran it and
// the fastest kernel in turn.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "pipeline/lean_kernels.h"

using memplan::round_slowdown;
using memplan::TimedRound;

TEST_CASE("a round that a busy moment slowed on one side does not set the slowdown", "[lean-kernels]") {
  // Five rounds at 1.1x; one where the fast kernel was slowed 3x, one where the lean one was.
  const std::vector<TimedRound> rounds = {{1.0, 1.1}, {3.0, 1.1}, {1.0, 1.1}, {1.0, 3.3}, {1.0, 1.1}, {1.0, 1.1}, {1.0, 1.1}};
  CHECK(round_slowdown(rounds).ratio == Approx(1.1));
}

TEST_CASE("one lucky run of the fast kernel does not set the slowdown", "[lean-kernels]") {
  // The fast kernel once ran in a quiet moment (0.6) the lean one did not share; otherwise the
  // lean kernel takes about 1.1x as long. The fastest of each (1.1 against 0.6) would read
  // 1.83x and pass a kernel over that costs a tenth more.
  const std::vector<TimedRound> rounds = {{0.6, 1.3}, {1.0, 1.1}, {1.0, 1.1}, {1.0, 1.1}, {1.2, 1.1}};
  double fastest = 1e9, leanest = 1e9;
  for (const TimedRound& r : rounds) fastest = std::min(fastest, r.fast), leanest = std::min(leanest, r.lean);
  REQUIRE(leanest / fastest > 1.8);
  CHECK(round_slowdown(rounds).ratio == Approx(1.1));
}

TEST_CASE("a machine busy for most rounds still reads the slowdown of the runs it left alone", "[lean-kernels]") {
  // Eight rounds, five of them slowed on one side or both (another process held a core).
  const std::vector<TimedRound> rounds = {{1.0, 1.1}, {1.0, 5.0}, {1.0, 1.1}, {4.0, 2.0},
                                          {2.0, 1.1}, {3.0, 8.0}, {5.0, 3.0}, {2.5, 1.5}};
  CHECK(round_slowdown(rounds).ratio == Approx(1.1));
}

TEST_CASE("no rounds read as infinitely slow, so no untimed kernel is taken", "[lean-kernels]") {
  CHECK(std::isinf(round_slowdown({}).ratio));
}

TEST_CASE("the slowdown comes with the fastest kernel's time, the lower quartile of its runs", "[lean-kernels]") {
  const std::vector<TimedRound> rounds = {{2.0, 2.4}, {9.0, 2.4}, {2.0, 2.4}, {2.0, 2.4}};
  CHECK(round_slowdown(rounds).fast_seconds == Approx(2.0));
}

using memplan::Slowdown;
using memplan::TimeBudget;

TEST_CASE("a kernel within 1.25x of the fastest is taken and counted, and the model is not timed for it", "[lean-kernels]") {
  int timed = 0;
  TimeBudget budget([&] { return ++timed, 0.0; });
  const std::optional<double> added = budget.cost(Slowdown{1.2, 0.001});
  REQUIRE(added);
  CHECK(*added == Approx(0.0002));
  CHECK(timed == 0);
}

TEST_CASE("a kernel past 1.25x is taken where what it adds fits the model's share, and not once the share is spent",
          "[lean-kernels]") {
  // A 10 ms model spares 2% of it, 0.2 ms; a 1.4x kernel of 0.3 ms adds 0.12 ms.
  int timed = 0;
  TimeBudget budget([&] { return ++timed, 0.010; });
  const std::optional<double> first = budget.cost(Slowdown{1.4, 0.0003});
  REQUIRE(first);
  CHECK(*first == Approx(0.00012));
  budget.spend(*first);
  // The same again would pass 0.2 ms together.
  CHECK_FALSE(budget.cost(Slowdown{1.4, 0.0003}));
  // Undone on trial, it is given back.
  budget.refund(*first);
  CHECK(budget.cost(Slowdown{1.4, 0.0003}));
  CHECK(timed == 1);
}

TEST_CASE("kernels within 1.25x spend the share that a slower one would need", "[lean-kernels]") {
  TimeBudget budget([] { return 0.010; });
  budget.spend(*budget.cost(Slowdown{1.2, 0.0009}));  // 0.18 ms of the 0.2
  CHECK_FALSE(budget.cost(Slowdown{1.3, 0.0001}));  // 0.03 ms more
  CHECK(budget.cost(Slowdown{1.3, 0.00005}));       // 0.015 ms more
}

TEST_CASE("a large kernel past 1.25x is passed over though a small one as slow is taken", "[lean-kernels]") {
  TimeBudget budget([] { return 0.010; });
  CHECK_FALSE(budget.cost(Slowdown{1.3, 0.001}));  // adds 0.3 ms of a 10 ms model
  CHECK(budget.cost(Slowdown{1.3, 0.0001}));       // adds 0.03 ms
}

TEST_CASE("a kernel that could not be timed is never taken on the model's time budget", "[lean-kernels]") {
  TimeBudget budget([] { return 1.0; });
  CHECK_FALSE(budget.cost(round_slowdown({})));
}

using memplan::VariantPick;

TEST_CASE("the first variant within 1.25x that lowers the arena is taken and ends the walk", "[lean-kernels]") {
  VariantPick walk;
  const VariantPick::Verdict not_lower = walk.offer(false, Slowdown{1.0, 0.001}, 0.0);
  CHECK_FALSE(not_lower.picked);
  CHECK(not_lower.walk_on);
  const VariantPick::Verdict taken = walk.offer(true, Slowdown{1.1, 0.001}, 0.0001);
  CHECK(taken.picked);
  CHECK_FALSE(taken.walk_on);
  CHECK(*walk.added() == Approx(0.0001));
}

TEST_CASE("a variant past 1.25x is picked while the walk goes on, and a later one that adds less replaces it",
          "[lean-kernels]") {
  VariantPick walk;
  const VariantPick::Verdict whole = walk.offer(true, Slowdown{1.5, 0.0001}, 0.00005);  // the leanest whole kernel
  CHECK(whole.picked);
  CHECK(whole.walk_on);
  const VariantPick::Verdict costlier = walk.offer(true, Slowdown{1.6, 0.0001}, 0.00006);  // two bands
  CHECK_FALSE(costlier.picked);
  CHECK(costlier.walk_on);
  const VariantPick::Verdict bands = walk.offer(true, Slowdown{1.3, 0.0001}, 0.00003);  // eight bands
  CHECK(bands.picked);
  CHECK(*walk.added() == Approx(0.00003));
}

TEST_CASE("a variant within 1.25x that adds more than the pick ends the walk and the pick stays", "[lean-kernels]") {
  // Each variant's timing reads the fastest kernel again: here slower, so a variant within the
  // line adds more than the pick did.
  VariantPick walk;
  REQUIRE(walk.offer(true, Slowdown{1.3, 0.0001}, 0.00003).picked);
  const VariantPick::Verdict v = walk.offer(true, Slowdown{1.2, 0.0002}, 0.00004);
  CHECK_FALSE(v.picked);
  CHECK_FALSE(v.walk_on);
  CHECK(*walk.added() == Approx(0.00003));
}

TEST_CASE("a variant the budget refuses is never picked and the walk goes on", "[lean-kernels]") {
  VariantPick walk;
  const VariantPick::Verdict v = walk.offer(true, Slowdown{2.0, 0.01}, std::nullopt);
  CHECK_FALSE(v.picked);
  CHECK(v.walk_on);
  CHECK_FALSE(walk.added());
}

// ---- the compile's tuning budget ----------------------------------------------------------------

using memplan::before_timing;
using memplan::cannot_win;
using memplan::TimingVerdict;
using memplan::TuningClock;

TEST_CASE("the tuning clock counts down from its budget on the clock it is given", "[lean-kernels]") {
  double now = 100;
  const TuningClock clock(1.5, [&] { return now; });
  CHECK(clock.left() == Approx(1.5));
  now += 1.0;
  CHECK(clock.spent() == Approx(1.0));
  CHECK(clock.left() == Approx(0.5));
  now += 1.0;
  CHECK(clock.left() < 0);
}

TEST_CASE("a plain loop expected far slower than the fastest kernel is not run where the model's share cannot take it",
          "[lean-kernels]") {
  TimeBudget share([] { return 1.0; });  // a 1 s model: 20 ms to share
  // 4x a 100 ms kernel adds 300 ms: out, whatever the time left to choose.
  CHECK(before_timing(0.1, 4.0, share, 100.0) == TimingVerdict::CannotWin);
  // 4x a 1 ms kernel adds 3 ms: it may win, and its timing (2 runs of 1 + 4 ms) fits.
  CHECK(before_timing(0.001, 4.0, share, 1.0) == TimingVerdict::Time);
}

TEST_CASE("a candidate whose least timing would pass the time left is not run, however likely to win", "[lean-kernels]") {
  int timed = 0;
  TimeBudget share([&] { return ++timed, 1.0; });
  // Two runs each of a 0.3 s kernel and its 1x variant: 1.2 s, against 1 s left.
  CHECK(before_timing(0.3, 1.0, share, 1.0) == TimingVerdict::PastBudget);
  CHECK(before_timing(0.3, 1.0, share, 1.3) == TimingVerdict::Time);
  CHECK(timed == 0);  // within 1.25x, the model's time is never needed
}

TEST_CASE("a candidate whose first run is many times the fastest's gets no rounds, one near the line does",
          "[lean-kernels]") {
  TimeBudget share([] { return 0.01; });  // 0.2 ms to share
  CHECK(cannot_win(Slowdown{30.0, 0.001}, share));
  // 2.2x in a first run may be 1.1x once warm.
  CHECK_FALSE(cannot_win(Slowdown{2.2, 0.001}, share));
}
