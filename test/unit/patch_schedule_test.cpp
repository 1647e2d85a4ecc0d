// Patch-based execution's pure core (plan/core/patch_schedule.h): chains typed in by hand, the
// rows each tile holds worked out on paper, and the checker catching planted mistakes (a halo a
// row short, tiles that skip or repeat output rows, tile buffers sharing bytes while both live).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "memplan/error.h"
#include "plan/core/patch_schedule.h"

using namespace memplan::plan;

namespace {

// x (10 rows) -> 3x3 conv, pad 1 -> a (10 rows) -> 3x3 conv, stride 2, pad 1 -> b (5 rows).
PatchChainShape two_convs() {
  PatchChainShape c;
  c.rows = {10, 10, 5};
  c.row_bytes = {100, 200, 100};
  c.layers = {{0, -1, 1, 3, 1, 1}, {1, -1, 2, 3, 2, 1}};
  return c;
}

// x (8 rows) -> 1x1 conv -> a -> 3x3 conv, pad 1, + a (residual) -> b: the addend read at b's rows.
PatchChainShape residual() {
  PatchChainShape c;
  c.rows = {8, 8, 8};
  c.row_bytes = {64, 128, 128};
  c.layers = {{0, -1, 1, 1, 1, 0}, {1, 1, 2, 3, 1, 1}};
  return c;
}

bool mentions(const std::optional<std::string>& e, const std::string& what) {
  return e && e->find(what) != std::string::npos;
}

}  // namespace

TEST_CASE("a layer's band reads its window's rows and pads only at the tensor's edges", "[plan][patches]") {
  const PatchChainShape c = two_convs();
  // Output rows [0, 2) of the stride-2 conv: input rows -1 .. 3, of which row -1 is padding.
  LayerRows top = layer_rows(c, 1, {0, 2});
  CHECK(top.in == RowRange{0, 4});
  CHECK(top.pad_top == 1);
  CHECK(top.pad_bottom == 0);
  // Output rows [4, 5): input rows 7 .. 9, all real (the padding row below is not reached).
  LayerRows bottom = layer_rows(c, 1, {4, 5});
  CHECK(bottom.in == RowRange{7, 10});
  CHECK(bottom.pad_top == 0);
  CHECK(bottom.pad_bottom == 0);
  // The first conv's last row reads one padding row below the input.
  CHECK(layer_rows(c, 0, {9, 10}).pad_bottom == 1);
}

TEST_CASE("each tile holds the rows its output tile needs through every layer, halos included", "[plan][patches]") {
  const PatchChainShape c = two_convs();
  const PatchSchedule s = schedule_patches(c, 2);
  REQUIRE(s.tiles.size() == 3);  // output rows [0, 2), [2, 4), [4, 5): the last tile is short
  // Tile 0: b [0, 2) <- a [0, 4) <- x [0, 5).
  CHECK(s.tiles[0] == std::vector<RowRange>{{0, 5}, {0, 4}, {0, 2}});
  // Tile 1: b [2, 4) <- a [3, 8) <- x [2, 9): a's rows 3 and x's rows 2 .. 4 are computed again.
  CHECK(s.tiles[1] == std::vector<RowRange>{{2, 9}, {3, 8}, {2, 4}});
  // Tile 2: b [4, 5) <- a [7, 10) <- x [6, 10).
  CHECK(s.tiles[2] == std::vector<RowRange>{{6, 10}, {7, 10}, {4, 5}});
  CHECK(s.capacity == std::vector<int64_t>{7, 5, 2});
  CHECK_FALSE(check_patch_schedule(c, s));
  // a: 4 + 5 + 3 rows computed for its 10 (rows 3 and 7 twice); b: each row once.
  CHECK(recomputed_rows(c, s) == std::vector<int64_t>{2, 0});
}

TEST_CASE("keeping rows, each tile computes only the rows no tile before it held, and keeps the rest",
          "[plan][patches]") {
  const PatchChainShape c = two_convs();
  const PatchSchedule s = schedule_patches(c, 2, true);
  REQUIRE(s.tiles.size() == 3);
  // Tile 1: b [2, 4) reads a [3, 8): a's row 3 is kept from tile 0, rows 4 .. 7 computed, which
  // read x [3, 9): x's rows 3 and 4 kept, 5 .. 8 copied in.
  CHECK(s.tiles[1] == std::vector<RowRange>{{3, 9}, {3, 8}, {2, 4}});
  CHECK(s.computed[1] == std::vector<RowRange>{{5, 9}, {4, 8}, {2, 4}});
  CHECK(s.tiles[2] == std::vector<RowRange>{{7, 10}, {7, 10}, {4, 5}});
  CHECK(s.computed[2] == std::vector<RowRange>{{9, 10}, {8, 10}, {4, 5}});
  CHECK(s.capacity == std::vector<int64_t>{6, 5, 2});
  CHECK_FALSE(check_patch_schedule(c, s));
  CHECK(recomputed_rows(c, s) == std::vector<int64_t>{0, 0});
  // x's and a's kept rows outlive the tile: they share no bytes; b's buffer (no window reads it
  // again) takes bytes of its own after them, live with both at its step (640 + 1024 + 256).
  CHECK(kept_across_tiles(s) == std::vector<bool>{true, true, false});
  CHECK(s.frame.frame_bytes == 1920);
}

TEST_CASE("the checker finds rows held that were neither computed nor kept", "[plan][patches]") {
  const PatchChainShape c = two_convs();
  PatchSchedule s = schedule_patches(c, 2, true);
  s.computed[1][1].lo = 5;  // a's row 4: tile 0 held [0, 4)
  CHECK(mentions(check_patch_schedule(c, s), "tile 1: tensor 1 holds rows [3, 5) it neither computes nor kept from the tile before"));
  // Computing halos again, a tile keeps nothing: its buffers do not outlive it.
  s = schedule_patches(c, 2, false);
  s.computed[1][1].lo = 4;
  CHECK(mentions(check_patch_schedule(c, s), "tile 1: tensor 1 holds rows [3, 4) it neither computes nor kept"));
  // Keeping rows, a buffer placed over another's bytes is an overlap, though not inside one tile.
  s = schedule_patches(c, 2, true);
  s.frame.offsets[2] = s.frame.offsets[0];
  CHECK(mentions(check_patch_schedule(c, s), "tile frame:"));
}

TEST_CASE("the tile frame gives a layer's input and output their own bytes and reuses the input's after it dies",
          "[plan][patches]") {
  const PatchChainShape c = two_convs();
  const PatchSchedule s = schedule_patches(c, 2);
  // x: 7 rows x 100 bytes, live at steps 0 .. 1; a: 5 x 200, steps 1 .. 2; b: 2 x 100, steps 2 .. 3.
  const std::vector<BufferRequest> want{{700, 0, 1}, {1000, 1, 2}, {200, 2, 3}};
  const std::vector<BufferRequest> got = tile_buffers(c, s.capacity, {false, false, false});
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    CHECK(got[i].size == want[i].size);
    CHECK(got[i].first == want[i].first);
    CHECK(got[i].last == want[i].last);
  }
  // b may take x's bytes (x is dead by b's step); a needs its own: 1000 and 700 bytes, each
  // rounded up to 64.
  CHECK(s.frame.frame_bytes == 1024 + 704);
}

TEST_CASE("a fused Add's addend and output get tile buffers of one height, and the addend lives until the Add",
          "[plan][patches]") {
  const PatchChainShape c = residual();
  const PatchSchedule s = schedule_patches(c, 3);
  // b [3, 6) reads a [2, 7) for the 3x3 window, and a [3, 6) as its addend.
  CHECK(s.tiles[1] == std::vector<RowRange>{{2, 7}, {2, 7}, {3, 6}});
  CHECK(s.capacity[1] == s.capacity[2]);
  CHECK(s.capacity[2] == 5);  // b's own tiles are 3 rows; a's are up to 5
  CHECK_FALSE(check_patch_schedule(c, s));
}

TEST_CASE("one tile as tall as the output runs the chain once, recomputing nothing", "[plan][patches]") {
  const PatchChainShape c = two_convs();
  const PatchSchedule s = schedule_patches(c, 100);
  CHECK(s.tile_rows == 5);
  REQUIRE(s.tiles.size() == 1);
  CHECK(s.capacity == std::vector<int64_t>{10, 10, 5});
  CHECK(recomputed_rows(c, s) == std::vector<int64_t>{0, 0});
}

TEST_CASE("the checker finds a halo one row short", "[plan][patches]") {
  const PatchChainShape c = two_convs();
  PatchSchedule s = schedule_patches(c, 2);
  s.tiles[1][1].hi -= 1;  // a [3, 7): the stride-2 window of b's row 3 reads a's row 7
  s.computed[1][1].hi -= 1;
  CHECK(mentions(check_patch_schedule(c, s), "tile 1: layer 1 reads rows [3, 8) of tensor 1, which holds only [3, 7) (a halo short)"));
  s = schedule_patches(c, 2);
  s.tiles[2][0].lo += 1;  // x [7, 10): a's row 7 reads x's row 6
  s.computed[2][0].lo += 1;
  CHECK(mentions(check_patch_schedule(c, s), "a halo short"));
}

TEST_CASE("the checker finds tiles that skip or repeat output rows", "[plan][patches]") {
  const PatchChainShape c = two_convs();
  PatchSchedule s = schedule_patches(c, 2);
  s.tiles.pop_back();
  s.computed.pop_back();
  CHECK(mentions(check_patch_schedule(c, s), "the tiles cover output rows [0, 4) of 5"));
  s = schedule_patches(c, 2);
  s.tiles[1][2] = s.computed[1][2] = {1, 4};
  CHECK(mentions(check_patch_schedule(c, s), "tile 1 writes output rows [1, 4) where rows from 2 are next"));
}

TEST_CASE("the checker finds tile buffers that share bytes while both live", "[plan][patches]") {
  const PatchChainShape c = two_convs();
  PatchSchedule s = schedule_patches(c, 2);
  s.frame.offsets[1] = s.frame.offsets[0];  // a over x, both live at step 1
  CHECK(mentions(check_patch_schedule(c, s), "tile frame:"));
}

TEST_CASE("the checker finds a range past its tile buffer and an addend of another row stride", "[plan][patches]") {
  PatchChainShape c = two_convs();
  PatchSchedule s = schedule_patches(c, 2);
  s.capacity[0] = 6;
  CHECK(mentions(check_patch_schedule(c, s), "overflow its tile buffer of 6 rows"));
  c = residual();
  s = schedule_patches(c, 3);
  s.capacity[2] = 3;
  CHECK(mentions(check_patch_schedule(c, s), "tensor 1 is added to tensor 2 with another row stride"));
}

TEST_CASE("rows no window reads are not computed, and not counted as computed again", "[plan][patches]") {
  // x (14 rows) -> 3x3 pool, stride 3 -> 4 rows: x's rows 12 and 13 are read by no window.
  PatchChainShape c;
  c.rows = {14, 14, 4};
  c.row_bytes = {16, 16, 16};
  c.layers = {{0, -1, 1, 1, 1, 0}, {1, -1, 2, 3, 3, 0}};
  const PatchSchedule s = schedule_patches(c, 1);
  CHECK(s.tiles.back() == std::vector<RowRange>{{9, 12}, {9, 12}, {3, 4}});
  CHECK(recomputed_rows(c, s) == std::vector<int64_t>{0, 0});
  CHECK_FALSE(check_patch_schedule(c, s));
}

TEST_CASE("a malformed chain is refused with the layer named", "[plan][patches]") {
  PatchChainShape c = two_convs();
  c.layers[1].input = 7;
  CHECK_THROWS_WITH(schedule_patches(c, 2), Catch::Contains("layer 1 names a tensor out of range"));
  c = two_convs();
  c.layers[0].output = 0;
  CHECK_THROWS_WITH(schedule_patches(c, 2), Catch::Contains("layer 0 writes tensor 0, written already"));
  c = two_convs();
  c.layers[0].input = 2;  // b, written only by the layer after
  CHECK_THROWS_WITH(schedule_patches(c, 2), Catch::Contains("layer 0 reads a tensor no earlier layer writes"));
  c = two_convs();
  c.rows[2] = 9;  // 9 rows of a stride-2 window over 10
  CHECK_THROWS_WITH(schedule_patches(c, 2), Catch::Contains("layer 1: 9 output rows do not fit 10 input rows"));
  c = two_convs();
  c.layers[0].pad_top = 3;
  CHECK_THROWS_WITH(schedule_patches(c, 2), Catch::Contains("is not a window"));
  c = two_convs();
  CHECK_THROWS_WITH(schedule_patches(c, 0), Catch::Contains("tiles of 0 rows"));
  c.row_bytes[1] = UINT64_MAX / 2;
  CHECK_THROWS_WITH(schedule_patches(c, 2), Catch::Contains("tile buffer overflows"));
}
