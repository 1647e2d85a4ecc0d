// Kernel selection's timing: how a leaner kernel's slowdown is read from rounds that ran it and
// the fastest kernel in turn.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "pipeline/lean_kernels.h"

using memplan::round_slowdown;
using memplan::TimedRound;

TEST_CASE("a round that a busy moment slowed on one side does not set the slowdown", "[lean-kernels]") {
  // Five rounds at 1.1x; one where the fast kernel was slowed 3x, one where the lean one was.
  const std::vector<TimedRound> rounds = {{1.0, 1.1}, {3.0, 1.1}, {1.0, 1.1}, {1.0, 3.3}, {1.0, 1.1}, {1.0, 1.1}, {1.0, 1.1}};
  CHECK(round_slowdown(rounds) == Approx(1.1));
}

TEST_CASE("one lucky run of the fast kernel does not set the slowdown", "[lean-kernels]") {
  // The fast kernel once ran in a quiet moment (0.6) the lean one did not share; otherwise the
  // lean kernel takes about 1.1x as long. The fastest of each (1.1 against 0.6) would read
  // 1.83x and pass a kernel over that costs a tenth more.
  const std::vector<TimedRound> rounds = {{0.6, 1.3}, {1.0, 1.1}, {1.0, 1.1}, {1.0, 1.1}, {1.2, 1.1}};
  double fastest = 1e9, leanest = 1e9;
  for (const TimedRound& r : rounds) fastest = std::min(fastest, r.fast), leanest = std::min(leanest, r.lean);
  REQUIRE(leanest / fastest > 1.8);
  CHECK(round_slowdown(rounds) == Approx(1.1));
}

TEST_CASE("a machine busy for most rounds still reads the slowdown of the runs it left alone", "[lean-kernels]") {
  // Eight rounds, five of them slowed on one side or both (another process held a core).
  const std::vector<TimedRound> rounds = {{1.0, 1.1}, {1.0, 5.0}, {1.0, 1.1}, {4.0, 2.0},
                                          {2.0, 1.1}, {3.0, 8.0}, {5.0, 3.0}, {2.5, 1.5}};
  CHECK(round_slowdown(rounds) == Approx(1.1));
}

TEST_CASE("no rounds read as infinitely slow, so no untimed kernel is taken", "[lean-kernels]") {
  CHECK(std::isinf(round_slowdown({})));
}
