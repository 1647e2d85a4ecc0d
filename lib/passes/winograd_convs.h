// Winograd's convolutions: a 3x3 convolution of stride 1 computed on small tiles of transformed
// inputs and weights takes a half to a third of the multiplications of the direct one, and oneDNN
// has kernels for it on AVX-512 (F(2,3) and F(4,3)). Their weights, transformed once at load, take
// 16/9 (F(2,3)) or 4 (F(4,3)) times the bytes, and their scratchpads the transformed tiles (F(4,3)'s
// are 8 to 15 MB for a 28x28 or 56x56 layer, more than most CNNs' whole arena). So the choice is a
// trade of memory for speed, made here by preference, always in oneDNN's choice of tile: none under
// memory; under balanced, on outputs of kWinogradMinPixels or more, the convolutions with the most
// output pixels first (the time saved per weight byte added grows with them) while the weights they
// add stay within kWinogradWeightShare of the run's floor (the model's weights and its arena, as
// its largest step's live bytes bound it: a detector's 2.5 MB of weights beside 12 MB of
// activations is as much a 15 MB process as a classifier's 12 MB of weights beside 3), leaving out
// those whose scratchpad would make their step the model's largest; every one under speed.
// While a model compiles, a chosen convolution also holds the direct kernel's weights it may give
// way to, until the kernels are settled. The kernel gives way to the direct one wherever its scratchpad
// would set the arena's peak, unless speed is preferred (pipeline/lean_kernels).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/winograd_conv.h"
#include "plan/planner.h"

namespace memplan {

// Under balanced, the weight bytes Winograd's kernels may add, as a share of the model's weights
// and arena.
constexpr double kWinogradWeightShare = 0.05;
// Under balanced, the fewest output pixels a convolution takes Winograd's kernel at. oneDNN's
// Winograd kernels ran 3x3 convolutions 1.4x to 3x as fast as its direct one at 14x14 and more
// (AVX-512, 1 and 2 threads), and at 7x7 0.9x to 1.3x: not worth 16/9 of the weights there.
constexpr uint64_t kWinogradMinPixels = 14 * 14;

// A convolution Winograd's kernel could run: the kernel (conv), its scratchpad, and the bytes of
// the tensors live at the node's step, each in bytes of its own (plan/lifetimes.h).
struct WinogradCandidate {
  WinogradConv conv;
  uint64_t scratchpad_bytes = 0;
  uint64_t live_bytes = 0;
};

// The candidates taken: most output pixels first (ties in the given order), each whose added
// weight bytes still fit in `budget` and whose step, with its scratchpad, holds at most
// `peak_bytes` (the most any step of the model holds: a kernel past it would set the arena's peak
// and give way, its budget spent for nothing). The pure choice, for tests.
std::vector<WinogradConv> pick_winograd_convs(std::vector<WinogradCandidate> candidates, uint64_t budget,
                                              uint64_t peak_bytes);

// Node n's Winograd kernel on this machine in oneDNN's choice of tile, with the weight bytes it
// would add and its scratchpad (`conv.node`, `output_pixels` and `live_bytes` are the pass's to
// fill); none where it has no such kernel for n (the ISA, the shape, the fused activation). The
// oneDNN kernels answer it (runtime/kernels/dnnl/winograd.h).
using WinogradProbe = std::function<std::optional<WinogradCandidate>(const Node& n)>;

// Chooses the main graph's convolutions to run in Winograd's form under `prefer` (with layouts
// assigned, as the kernels will see them), marks them (mark_winograd_convs) and returns them.
std::vector<WinogradConv> choose_winograd_convs(Model& model, KernelPreference prefer, const WinogradProbe& probe);

// Marks the named nodes of the main graph (a plan's record) for Winograd's kernels, and no other:
// fails naming the model and the node where one is missing or not a Conv.
void mark_winograd_convs(Model& model, const std::vector<WinogradConv>& convs);

}  // namespace memplan
