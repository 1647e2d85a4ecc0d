#include "passes/winograd_convs.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "memplan/error.h"
#include "plan/lifetimes.h"
#include "util/checked.h"

namespace memplan {

namespace {

uint64_t output_pixels(const Node& n) {
  const Value* y = n.outputs.empty() ? nullptr : n.outputs[0];
  if (!y || !y->type.is_static() || y->type.dims.size() < 3) return 0;
  uint64_t pixels = 1;
  for (size_t d = 2; d < y->type.dims.size(); ++d)
    pixels = checked_mul(pixels, static_cast<uint64_t>(y->type.dims[d].value), "output pixels of " + n.describe());
  return pixels;
}

// The bytes of the main graph's tensors live at each step, each in bytes of its own.
std::vector<uint64_t> live_bytes_by_step(const Graph& main) {
  std::vector<uint64_t> change(main.nodes.size() + 1, 0), live(main.nodes.size(), 0);
  std::vector<uint64_t> ends(main.nodes.size() + 1, 0);
  for (const plan::LocalBuffer& b : plan::tensor_buffers(main)) {
    if (b.first < 0 || b.last < b.first || static_cast<size_t>(b.last) >= main.nodes.size()) continue;
    change[static_cast<size_t>(b.first)] = checked_add(change[static_cast<size_t>(b.first)], b.size, "live bytes");
    ends[static_cast<size_t>(b.last) + 1] = checked_add(ends[static_cast<size_t>(b.last) + 1], b.size, "live bytes");
  }
  uint64_t now = 0;
  for (size_t t = 0; t < main.nodes.size(); ++t) {
    now = now + change[t] - ends[t];
    live[t] = now;
  }
  return live;
}

void unmark_all(Graph& main) {
  for_each_graph(main, [](Graph& g) {
    for (const auto& n : g.nodes) n->erase_attr(kWinogradAttr);
  });
}

}  // namespace

std::vector<WinogradConv> pick_winograd_convs(std::vector<WinogradCandidate> candidates, uint64_t budget,
                                              uint64_t peak_bytes) {
  std::stable_sort(candidates.begin(), candidates.end(), [](const WinogradCandidate& a, const WinogradCandidate& b) {
    return a.conv.output_pixels > b.conv.output_pixels;
  });
  std::vector<WinogradConv> picked;
  uint64_t spent = 0;
  for (const WinogradCandidate& c : candidates) {
    if (c.conv.added_bytes > budget - spent || c.scratchpad_bytes > peak_bytes || c.live_bytes > peak_bytes - c.scratchpad_bytes)
      continue;
    spent += c.conv.added_bytes;
    picked.push_back(c.conv);
  }
  return picked;
}

std::vector<WinogradConv> choose_winograd_convs(Model& model, KernelPreference prefer, const WinogradProbe& probe) {
  unmark_all(*model.main);
  if (prefer == KernelPreference::Memory) return {};
  const bool balanced = prefer == KernelPreference::Balanced;
  const std::vector<uint64_t> live = live_bytes_by_step(*model.main);
  std::vector<WinogradCandidate> candidates;
  for (size_t i = 0; i < model.main->nodes.size(); ++i) {
    const Node& n = *model.main->nodes[i];
    if (n.op_type != "Conv" || !n.domain.empty()) continue;
    const uint64_t pixels = output_pixels(n);
    if (balanced && pixels < kWinogradMinPixels) continue;
    if (std::optional<WinogradCandidate> c = probe(n)) {
      c->conv.node = n.name;
      c->conv.output_pixels = pixels;
      c->live_bytes = live[i];
      candidates.push_back(*c);
    }
  }
  const uint64_t unlimited = std::numeric_limits<uint64_t>::max();
  const uint64_t peak = balanced && !live.empty() ? *std::max_element(live.begin(), live.end()) : unlimited;
  // The run's floor: the weights and the arena, which the peak's live bytes bound from below.
  const double floor_bytes = static_cast<double>(weights_bytes(model)) + static_cast<double>(live.empty() ? 0 : peak);
  const uint64_t budget = balanced ? static_cast<uint64_t>(std::floor(kWinogradWeightShare * floor_bytes)) : unlimited;
  const size_t count = candidates.size();
  std::vector<WinogradConv> picked = pick_winograd_convs(std::move(candidates), budget, peak);
  spdlog::debug("Winograd's kernels: {} convolutions have them, {} taken within {}", count, picked.size(),
                balanced ? std::to_string(budget) + " added weight bytes" : std::string("no limit"));
  mark_winograd_convs(model, picked);
  return picked;
}

void mark_winograd_convs(Model& model, const std::vector<WinogradConv>& convs) {
  unmark_all(*model.main);
  for (const WinogradConv& conv : convs) {
    const std::string& name = conv.node;
    const auto it = std::find_if(model.main->nodes.begin(), model.main->nodes.end(),
                                 [&](const auto& n) { return n->name == name; });
    if (it == model.main->nodes.end() || (*it)->op_type != "Conv" || !(*it)->domain.empty())
      fail(model.path + ": the plan runs node '" + name + "' as a Winograd convolution, and the model's main graph " +
           (it == model.main->nodes.end() ? "has no such node" : "has it as a " + (*it)->op_type));
    if (conv.tile != 2 && conv.tile != 4)
      fail(model.path + ": the plan runs node '" + name + "' as a Winograd convolution of tile " +
           std::to_string(conv.tile) + "; only 2 and 4 exist");
    (*it)->set_attr_int(kWinogradAttr, conv.tile);
  }
}

}  // namespace memplan
