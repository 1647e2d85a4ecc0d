// A convolution run in Winograd's form (passes/winograd_convs.h), as the pass chose it and a plan
// records it, and the node attribute that asks its kernel for it.
#pragma once

#include <cstdint>
#include <string>

#include "ir/graph.h"

namespace memplan {

struct WinogradConv {
  std::string node;              // a Conv node of the main graph
  int32_t tile = 2;              // output rows and columns of a tile: 2 (F(2,3)) or 4 (F(4,3))
  uint64_t added_bytes = 0;      // its transformed weights' bytes over its own
  uint64_t output_pixels = 0;    // per image: the order the pass takes candidates in
};

// The attribute passes/winograd_convs sets on a chosen Conv: the tile its kernel is asked for. A
// model's own attribute of the name is dropped there, so only that choice (or a plan's record of
// it) asks.
inline constexpr const char* kWinogradAttr = "memplan.winograd";

// The tile of Winograd's kernel node n is marked for (2 or 4), 0 for none.
inline int winograd_tile(const Node& n) { return static_cast<int>(n.attr_int(kWinogradAttr, 0)); }

}  // namespace memplan
