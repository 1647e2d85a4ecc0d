// The planner's pure core: hand-typed buffers, exact expected offsets (TFLite Micro style), and a
// randomized check that every strategy's placement is valid, judged by a brute-force oracle.
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "memplan/error.h"
#include "plan/core/buffers.h"
#include "plan/core/strategies.h"

using namespace memplan::plan;
using Offsets = std::vector<uint64_t>;

namespace {

// (first, last, size), the order the paper's tables use.
BufferRequest buf(int32_t first, int32_t last, uint64_t size) { return BufferRequest{size, first, last}; }

// Pisarchyk & Lee 2020, figure 2: eight tensors of a small network, lower bound 124.
const std::vector<BufferRequest> kPaperExample{
    buf(0, 1, 32), buf(1, 4, 28), buf(2, 5, 36), buf(3, 5, 16),
    buf(4, 5, 8),  buf(5, 7, 64), buf(6, 8, 10), buf(7, 8, 40),
};

// An independent O(n^2) oracle for the tests, so the library checker is not judging itself.
bool brute_force_valid(const std::vector<BufferRequest>& reqs, const Placement& pl, uint64_t align) {
  if (pl.offsets.size() != reqs.size()) return false;
  auto size = [&](size_t i) { return (reqs[i].size + align - 1) / align * align; };
  for (size_t i = 0; i < reqs.size(); ++i) {
    if (pl.offsets[i] % align != 0 || pl.offsets[i] + size(i) > pl.frame_bytes) return false;
    for (size_t j = 0; j < i; ++j) {
      const bool same_time = reqs[i].first <= reqs[j].last && reqs[j].first <= reqs[i].last;
      const bool same_bytes = size(i) > 0 && size(j) > 0 && pl.offsets[i] < pl.offsets[j] + size(j) &&
                              pl.offsets[j] < pl.offsets[i] + size(i);
      if (same_time && same_bytes) return false;
    }
  }
  return true;
}

void require_valid(const std::vector<BufferRequest>& reqs, const Placement& pl, uint64_t align) {
  INFO(ascii_timeline(reqs, pl));
  REQUIRE(find_placement_error(reqs, pl, align) == std::nullopt);
  REQUIRE(brute_force_valid(reqs, pl, align));
}

}  // namespace

TEST_CASE("strategy names round-trip and auto picks among the four concrete ones in order", "[plan-core]") {
  REQUIRE(concrete_strategies() == std::vector<Strategy>{Strategy::Naive, Strategy::BestFit,
                                                         Strategy::GreedyBySize, Strategy::GreedyByBreadth});
  for (Strategy s : {Strategy::Naive, Strategy::BestFit, Strategy::GreedyBySize, Strategy::GreedyByBreadth,
                     Strategy::Auto}) {
    REQUIRE(parse_strategy(strategy_name(s)) == s);
  }
  CHECK(strategy_name(Strategy::GreedyByBreadth) == "greedy-by-breadth");
  CHECK(parse_strategy("best-fit") == Strategy::BestFit);
  CHECK(parse_strategy("greedy") == std::nullopt);
  CHECK(parse_strategy("") == std::nullopt);
}

TEST_CASE("naive gives every buffer its own aligned bytes in request order", "[plan-core]") {
  const std::vector<BufferRequest> reqs{buf(0, 0, 10), buf(0, 0, 0), buf(5, 9, 64), buf(1, 1, 65)};
  const Placement pl = plan_naive(reqs, 64);
  CHECK(pl.offsets == Offsets{0, 0, 64, 128});
  CHECK(pl.frame_bytes == 256);
  require_valid(reqs, pl, 64);
}

TEST_CASE("best-fit allocates larger first at a step and grows the free block at the top", "[plan-core]") {
  const std::vector<BufferRequest> reqs{
      buf(0, 0, 16),  // step 0: placed after the larger buffer 1 -> 32
      buf(0, 3, 32),  // -> 0
      buf(1, 1, 24),  // step 1: 0 freed leaves [32,48) at the top; too small, so it grows -> 32, frame 56
      buf(2, 2, 8),   // step 2: 2 freed -> [32,56) free; smallest fit -> 32
      buf(2, 3, 8),   // -> 40 (the rest of that block)
      buf(3, 3, 24),  // step 3: free [32,40) and [48,56); neither fits, top block [48,56) grows -> 48
  };
  const Placement pl = plan_best_fit(reqs, 1);
  CHECK(pl.offsets == Offsets{32, 0, 32, 32, 40, 48});
  CHECK(pl.frame_bytes == 72);
  require_valid(reqs, pl, 1);
}

TEST_CASE("best-fit coalesces neighbours it frees so a larger buffer fits below the top", "[plan-core]") {
  // Without coalescing, [0,16) and [16,32) are both too small and buffer 2 would go to 16 (frame 48).
  const std::vector<BufferRequest> reqs{buf(0, 0, 16), buf(0, 0, 16), buf(1, 1, 32)};
  const Placement pl = plan_best_fit(reqs, 1);
  CHECK(pl.offsets == Offsets{0, 16, 0});
  CHECK(pl.frame_bytes == 32);
}

TEST_CASE("best-fit takes the smallest free block that fits, not the first", "[plan-core]") {
  const std::vector<BufferRequest> reqs{buf(0, 0, 48), buf(0, 2, 16), buf(0, 0, 16), buf(0, 2, 16),
                                        buf(1, 1, 16)};
  // Step 0: 0 -> 0, then 1, 2, 3 (equal sizes, by index) -> 48, 64, 80. Step 1 frees [0,48) and
  // [64,80); buffer 4 takes the 16-byte block, leaving the 48-byte one whole.
  const Placement pl = plan_best_fit(reqs, 1);
  CHECK(pl.offsets == Offsets{0, 48, 64, 80, 64});
  CHECK(pl.frame_bytes == 96);
}

TEST_CASE("best-fit keeps a buffer that ends at a step alive during it", "[plan-core]") {
  // Lifetimes are inclusive: buffer 0 is still read at step 1, so buffer 1 cannot take its bytes.
  const std::vector<BufferRequest> reqs{buf(0, 1, 32), buf(1, 2, 32), buf(2, 2, 32)};
  const Placement pl = plan_best_fit(reqs, 1);
  CHECK(pl.offsets == Offsets{0, 32, 0});
  CHECK(pl.frame_bytes == 64);
}

TEST_CASE("greedy-by-size reuses the bytes of buffers whose lifetimes do not overlap", "[plan-core]") {
  const std::vector<BufferRequest> reqs{buf(0, 1, 10), buf(1, 2, 20), buf(2, 3, 10), buf(0, 3, 5)};
  // 1 (20) -> 0; 0 and 2 (10) overlap only 1 -> 20, sharing bytes; 3 overlaps all -> 30.
  const Placement pl = plan_greedy_by_size(reqs, 1);
  CHECK(pl.offsets == Offsets{20, 0, 20, 30});
  CHECK(pl.frame_bytes == 35);
  CHECK(lower_bound(reqs, 1) == 35);
}

TEST_CASE("greedy-by-size takes the smallest gap that fits, not the first", "[plan-core]") {
  const std::vector<BufferRequest> reqs{
      buf(3, 3, 70),  // V -> 0
      buf(2, 2, 40),  // W -> 0
      buf(0, 1, 12),  // X -> 0 (overlaps neither V nor W)
      buf(1, 2, 10),  // Y: above W -> 40
      buf(1, 3, 10),  // Z: above V -> 70
      buf(1, 1, 8),   // Q overlaps X [0,12), Y [40,50), Z [70,80): gaps of 28 and 20, takes the 20 -> 50
  };
  const Placement pl = plan_greedy_by_size(reqs, 1);
  CHECK(pl.offsets == Offsets{0, 0, 0, 40, 70, 50});
  CHECK(pl.frame_bytes == 80);
  require_valid(reqs, pl, 1);
}

TEST_CASE("greedy-by-breadth places the widest step's buffers first", "[plan-core]") {
  const std::vector<BufferRequest> reqs{buf(0, 0, 40), buf(0, 1, 10), buf(1, 2, 30), buf(2, 2, 20)};
  // Breadths 50, 40, 50: step 0 first (0 -> 0, 1 -> 40), then step 2 (2 fits below 1 -> 0, 3 -> 30).
  const Placement pl = plan_greedy_by_breadth(reqs, 1);
  CHECK(pl.offsets == Offsets{0, 40, 0, 30});
  CHECK(pl.frame_bytes == 50);
  CHECK(lower_bound(reqs, 1) == 50);
}

TEST_CASE("the paper's example: exact offsets for every strategy", "[plan-core]") {
  CHECK(lower_bound(kPaperExample, 1) == 124);

  const Placement naive = plan_naive(kPaperExample, 1);
  CHECK(naive.offsets == Offsets{0, 32, 60, 96, 112, 120, 184, 194});
  CHECK(naive.frame_bytes == 234);

  // Steps 0..7: alloc 0@0, 1@32, 2@60 (top), 3@0, 4@16; step 5 frees 1 (coalesced [24,60)), 5@96 (top);
  // step 6 frees 2, 3, 4 -> [0,96) free: 6@0, 7@10.
  const Placement best_fit = plan_best_fit(kPaperExample, 1);
  CHECK(best_fit.offsets == Offsets{0, 32, 60, 0, 16, 96, 0, 10});
  CHECK(best_fit.frame_bytes == 160);

  // Order 5, 7, 2, 0, 1, 3, 6, 4: 5@0, 7@64, 2@64, 0@0, 1 in the gap [32,64), 3@100, 6@104, 4@116.
  const Placement by_size = plan_greedy_by_size(kPaperExample, 1);
  CHECK(by_size.offsets == Offsets{0, 32, 64, 100, 116, 0, 104, 64});
  CHECK(by_size.frame_bytes == 124);

  // Steps by breadth 5 (124), 7 (114), 4 (88), ..., 1 (60): 5@0, 2@64, 3@100, 4@116; 7@64, 6@104;
  // 1 below 2 -> 0; finally 0 above 1 -> 28.
  const Placement by_breadth = plan_greedy_by_breadth(kPaperExample, 1);
  CHECK(by_breadth.offsets == Offsets{28, 0, 64, 100, 116, 0, 104, 64});
  CHECK(by_breadth.frame_bytes == 124);

  // Auto: greedy-by-size and greedy-by-breadth tie at 124; greedy-by-size comes first.
  const Placement chosen = plan(Strategy::Auto, kPaperExample, 1);
  CHECK(chosen.offsets == by_size.offsets);
  CHECK(chosen.frame_bytes == 124);

  for (const Placement* pl : {&naive, &best_fit, &by_size, &by_breadth}) require_valid(kPaperExample, *pl, 1);
}

TEST_CASE("sizes are rounded up to the alignment and every offset is a multiple of it", "[plan-core]") {
  const std::vector<BufferRequest> reqs{buf(0, 1, 100), buf(1, 2, 1), buf(2, 3, 64), buf(0, 3, 65)};
  CHECK(lower_bound(reqs, 64) == 128 + 64 + 128);
  for (Strategy s : concrete_strategies()) {
    INFO(strategy_name(s));
    const Placement pl = plan(s, reqs, 64);
    for (uint64_t off : pl.offsets) CHECK(off % 64 == 0);
    CHECK(pl.frame_bytes % 64 == 0);
    require_valid(reqs, pl, 64);
  }
  const Placement pl = plan_greedy_by_size(reqs, 64);
  // 0 and 3 (128 each) first: 0@0, 3@128; 2 (64) overlaps 3 only -> 0; 1 overlaps 0 [0,128), 2 [0,64), 3 -> 256.
  CHECK(pl.offsets == Offsets{0, 256, 0, 128});
  CHECK(pl.frame_bytes == 320);
}

TEST_CASE("the checker reports a misaligned offset", "[plan-core]") {
  const std::vector<BufferRequest> reqs{buf(0, 0, 64), buf(0, 0, 64)};
  const Placement misaligned{{0, 96}, 160};
  const auto error = find_placement_error(reqs, misaligned, 64);
  REQUIRE(error);
  CHECK_THAT(*error, Catch::Contains("buffer 1") && Catch::Contains("not a multiple"));
  CHECK(find_placement_error(reqs, misaligned, 32) == std::nullopt);  // fine at a smaller alignment
}

TEST_CASE("zero-size buffers get offset 0 and occupy nothing", "[plan-core]") {
  const std::vector<BufferRequest> reqs{buf(0, 2, 0), buf(0, 2, 32), buf(1, 1, 0), buf(1, 2, 16)};
  CHECK(lower_bound(reqs, 16) == 48);
  for (Strategy s : concrete_strategies()) {
    INFO(strategy_name(s));
    const Placement pl = plan(s, reqs, 16);
    CHECK(pl.offsets[0] == 0);
    CHECK(pl.offsets[2] == 0);
    CHECK(pl.frame_bytes == 48);
    require_valid(reqs, pl, 16);
  }
  const std::vector<BufferRequest> only_empty{buf(0, 5, 0), buf(3, 4, 0)};
  for (Strategy s : concrete_strategies()) {
    const Placement pl = plan(s, only_empty, 8);
    CHECK(pl.offsets == Offsets{0, 0});
    CHECK(pl.frame_bytes == 0);
  }
}

TEST_CASE("an empty list plans to an empty frame", "[plan-core]") {
  for (Strategy s : concrete_strategies()) {
    const Placement pl = plan(s, {}, 64);
    CHECK(pl.offsets.empty());
    CHECK(pl.frame_bytes == 0);
  }
  CHECK(lower_bound({}, 64) == 0);
}

TEST_CASE("a single buffer goes at offset 0 and the frame is its aligned size", "[plan-core]") {
  const std::vector<BufferRequest> reqs{buf(7, 7, 1000)};
  for (Strategy s : {Strategy::Naive, Strategy::BestFit, Strategy::GreedyBySize, Strategy::GreedyByBreadth,
                     Strategy::Auto}) {
    const Placement pl = plan(s, reqs, 256);
    CHECK(pl.offsets == Offsets{0});
    CHECK(pl.frame_bytes == 1024);
  }
}

TEST_CASE("buffers with disjoint lifetimes share offset 0 in every reusing strategy", "[plan-core]") {
  const std::vector<BufferRequest> reqs{buf(0, 1, 48), buf(2, 2, 64), buf(3, 9, 16), buf(10, 10, 64)};
  for (Strategy s : {Strategy::BestFit, Strategy::GreedyBySize, Strategy::GreedyByBreadth}) {
    INFO(strategy_name(s));
    const Placement pl = plan(s, reqs, 16);
    CHECK(pl.offsets == Offsets{0, 0, 0, 0});
    CHECK(pl.frame_bytes == 64);
  }
}

TEST_CASE("sparse and huge step numbers are planned like dense ones", "[plan-core]") {
  constexpr int32_t kMax = std::numeric_limits<int32_t>::max(), kMin = std::numeric_limits<int32_t>::min();
  const std::vector<BufferRequest> sparse{buf(kMin, -5, 32), buf(-5, 1000000, 16), buf(2000000, kMax, 32),
                                          buf(kMax, kMax, 8)};
  const std::vector<BufferRequest> dense{buf(0, 1, 32), buf(1, 2, 16), buf(3, 4, 32), buf(4, 4, 8)};
  CHECK(lower_bound(sparse, 8) == 48);
  for (Strategy s : concrete_strategies()) {
    INFO(strategy_name(s));
    const Placement a = plan(s, sparse, 8), b = plan(s, dense, 8);
    CHECK(a.offsets == b.offsets);
    CHECK(a.frame_bytes == b.frame_bytes);
    require_valid(sparse, a, 8);
  }
}

TEST_CASE("the checker rejects a buffer moved onto a live neighbour and accepts valid placements", "[plan-core]") {
  Placement pl = plan_greedy_by_size(kPaperExample, 1);
  REQUIRE(find_placement_error(kPaperExample, pl, 1) == std::nullopt);

  // Buffer 4 (steps [4,5]) onto buffer 3 (steps [3,5]) at 100.
  pl.offsets[4] = 100;
  const auto error = find_placement_error(kPaperExample, pl, 1);
  REQUIRE(error);
  CHECK_THAT(*error, Catch::Contains("buffer 3") && Catch::Contains("buffer 4") && Catch::Contains("share bytes"));

  // Buffer 0 (steps [0,1]) onto the bytes of buffers 2 and 7 is fine: they are never live together.
  pl = plan_greedy_by_size(kPaperExample, 1);
  pl.offsets[0] = 64;
  CHECK(find_placement_error(kPaperExample, pl, 1) == std::nullopt);

  // Touching ends are not an overlap; one byte more is.
  const std::vector<BufferRequest> two{buf(0, 3, 10), buf(3, 4, 10)};
  CHECK(find_placement_error(two, Placement{{0, 10}, 20}, 1) == std::nullopt);
  CHECK(find_placement_error(two, Placement{{0, 9}, 20}, 1).has_value());
  CHECK(find_placement_error(two, Placement{{10, 0}, 20}, 1) == std::nullopt);
  CHECK(find_placement_error(two, Placement{{9, 0}, 20}, 1).has_value());
}

TEST_CASE("the checker rejects wrong offset counts and buffers past the frame", "[plan-core]") {
  const std::vector<BufferRequest> reqs{buf(0, 0, 10), buf(1, 1, 10)};
  const auto count = find_placement_error(reqs, Placement{{0}, 10}, 1);
  REQUIRE(count);
  CHECK_THAT(*count, Catch::Contains("1 offsets for 2 buffers"));
  const auto past = find_placement_error(reqs, Placement{{0, 5}, 10}, 1);
  REQUIRE(past);
  CHECK_THAT(*past, Catch::Contains("buffer 1") && Catch::Contains("past the frame"));
  CHECK(find_placement_error(reqs, Placement{{0, std::numeric_limits<uint64_t>::max()}, 10}, 1).has_value());
}

TEST_CASE("invalid alignments, lifetimes and sizes throw memplan::Error", "[plan-core]") {
  const std::vector<BufferRequest> ok{buf(0, 1, 8)};
  for (uint64_t align : {uint64_t{0}, uint64_t{3}, uint64_t{48}, uint64_t{65}}) {
    INFO(align);
    for (Strategy s : {Strategy::Naive, Strategy::BestFit, Strategy::GreedyBySize, Strategy::GreedyByBreadth,
                       Strategy::Auto}) {
      CHECK_THROWS_AS(plan(s, ok, align), memplan::Error);
    }
    CHECK_THROWS_WITH(lower_bound(ok, align), Catch::Contains("not a power of two"));
    CHECK_THROWS_AS(find_placement_error(ok, Placement{{0}, 8}, align), memplan::Error);
  }

  const std::vector<BufferRequest> backwards{buf(0, 1, 8), buf(5, 4, 8)};
  for (Strategy s : concrete_strategies()) {
    CHECK_THROWS_WITH(plan(s, backwards, 1), Catch::Contains("buffer 1") && Catch::Contains("after last step"));
  }
  CHECK_THROWS_AS(lower_bound(backwards, 1), memplan::Error);

  constexpr uint64_t kHuge = std::numeric_limits<uint64_t>::max() - 10;
  const std::vector<BufferRequest> unalignable{buf(0, 0, 8), buf(0, 0, kHuge)};
  for (Strategy s : concrete_strategies()) {
    CHECK_THROWS_WITH(plan(s, unalignable, 64), Catch::Contains("buffer 1") && Catch::Contains("overflows 64 bits"));
  }
  // Each size fits, but two live together do not: every sum is checked.
  const std::vector<BufferRequest> together{buf(0, 1, kHuge / 2 + 100), buf(1, 2, kHuge / 2 + 100)};
  CHECK_THROWS_WITH(lower_bound(together, 1), Catch::Contains("overflows 64 bits"));
  for (Strategy s : concrete_strategies()) {
    INFO(strategy_name(s));
    CHECK_THROWS_WITH(plan(s, together, 1), Catch::Contains("overflows 64 bits"));
  }
  // Apart, they can share bytes, except in naive, which gives each its own.
  const std::vector<BufferRequest> apart{buf(0, 0, kHuge / 2 + 100), buf(1, 1, kHuge / 2 + 100)};
  CHECK(plan_greedy_by_size(apart, 1).frame_bytes == kHuge / 2 + 100);
  CHECK_THROWS_WITH(plan_naive(apart, 1), Catch::Contains("overflows 64 bits"));
}

TEST_CASE("ascii_timeline draws one row per step and a letter per buffer", "[plan-core]") {
  const std::vector<BufferRequest> reqs{buf(0, 1, 50), buf(1, 2, 50), buf(2, 2, 50)};
  const Placement pl = plan_greedy_by_size(reqs, 1);  // 0@0, 1@50, 2@0
  const std::string picture = ascii_timeline(reqs, pl, 10);
  CHECK(picture ==
        "frame 100 bytes, 10 columns of 10.0 bytes; buffer 0 = 'A'\n"
        "step 0 |AAAAA.....|\n"
        "step 1 |AAAAABBBBB|\n"
        "step 2 |CCCCCBBBBB|\n");
  // An overlap shows as '!'.
  CHECK_THAT(ascii_timeline(reqs, Placement{{0, 40, 0}, 100}, 10), Catch::Contains("step 1 |AAAA!BBBB.|"));
  CHECK_THROWS_AS(ascii_timeline(reqs, Placement{{0}, 100}), memplan::Error);
}

TEST_CASE("every strategy gives a valid placement no smaller than the lower bound, on random lists", "[plan-core]") {
  std::mt19937_64 rng(20240611);
  auto uniform = [&](uint64_t lo, uint64_t hi) { return std::uniform_int_distribution<uint64_t>(lo, hi)(rng); };
  for (int round = 0; round < 400; ++round) {
    const uint64_t align = uint64_t{1} << uniform(0, 6);
    const int32_t steps = static_cast<int32_t>(uniform(1, 40));
    std::vector<BufferRequest> reqs(uniform(0, 60));
    for (BufferRequest& r : reqs) {
      r.first = static_cast<int32_t>(uniform(0, steps - 1));
      // Mostly short lifetimes, some long, as in a network with skip connections.
      r.last = r.first + static_cast<int32_t>(uniform(0, 9) == 0 ? uniform(0, steps) : uniform(0, 3));
      r.size = uniform(0, 7) == 0 ? 0 : uniform(1, uniform(0, 1) ? 100 : 5000);
    }
    INFO("round " << round << ", align " << align << ", " << reqs.size() << " buffers");
    const uint64_t bound = lower_bound(reqs, align);
    const Placement chosen = plan(Strategy::Auto, reqs, align);
    uint64_t naive_frame = 0;
    for (const BufferRequest& r : reqs) naive_frame += (r.size + align - 1) / align * align;
    for (Strategy s : concrete_strategies()) {
      INFO(strategy_name(s));
      const Placement pl = plan(s, reqs, align);
      require_valid(reqs, pl, align);
      CHECK(pl.frame_bytes >= bound);
      CHECK(chosen.frame_bytes <= pl.frame_bytes);
      if (s == Strategy::Naive) CHECK(pl.frame_bytes == naive_frame);
      if (s != Strategy::Naive) CHECK(pl.frame_bytes <= naive_frame);
    }
    // The checker catches a buffer moved onto another one it shares a step with.
    Placement broken = plan_greedy_by_size(reqs, align);
    for (size_t i = 0; i < reqs.size(); ++i) {
      for (size_t j = 0; j < reqs.size(); ++j) {
        const bool same_time = reqs[i].first <= reqs[j].last && reqs[j].first <= reqs[i].last;
        if (i == j || !same_time || reqs[i].size == 0 || reqs[j].size == 0) continue;
        const uint64_t saved = broken.offsets[i];
        broken.offsets[i] = broken.offsets[j];
        broken.frame_bytes = std::max(broken.frame_bytes, broken.offsets[i] + (reqs[i].size + align - 1) / align * align);
        CHECK(find_placement_error(reqs, broken, align).has_value());
        CHECK_FALSE(brute_force_valid(reqs, broken, align));
        broken.offsets[i] = saved;
        i = j = reqs.size();  // one mutation per list is enough
      }
    }
  }
}
