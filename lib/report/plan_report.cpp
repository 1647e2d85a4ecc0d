#include "report/plan_report.h"

#include <algorithm>
#include <cstdio>
#include <iomanip>
#include <map>
#include <sstream>

#include "plan/plan_peak.h"
#include "util/json.h"

namespace memplan {
namespace {

std::string ratio(uint64_t a, uint64_t b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", b ? static_cast<double>(a) / static_cast<double>(b) : 1.0);
  return buf;
}

using plan::Peak;
using plan::Storage;

Peak main_peak(const MemoryPlan& plan) { return plan.graphs.empty() ? Peak{} : plan::peak_of(plan.graphs[0]); }

const char* home_name(SlotHome h) {
  switch (h) {
    case SlotHome::OneSlot: return "one slot";
    case SlotHome::NodeOutput: return "loop output";
    case SlotHome::Dynamic: return "dynamic";
    case SlotHome::TwoSlots: break;
  }
  return "two slots";
}

// Where a loop keeps a carried value between iterations, for the text report.
std::string slot_text(const Region& r, const CarriedSlots& c) {
  const std::string head = r.op_type + " '" + r.node + "' ";
  const std::string updated = c.writer >= 0 ? " (updated in place at body step " + std::to_string(c.writer) + ")" : "";
  const std::string grows = c.grows ? " (its shape grows or shrinks with the run: the slot holds its bound)" : "";
  switch (c.home) {
    case SlotHome::TwoSlots:
      return head + "slots for '" + c.name + "': " + std::to_string(c.size) + " bytes at +" + std::to_string(c.slot0) +
             ", +" + std::to_string(c.slot1) + grows;
    case SlotHome::OneSlot:
      return head + "slot for '" + c.name + "': " + std::to_string(c.size) + " bytes at +" + std::to_string(c.slot0) + updated +
             grows;
    case SlotHome::NodeOutput:
      return head + "keeps '" + c.name + "' (" + std::to_string(c.size) + " bytes) in its output" + updated + ": no slot";
    case SlotHome::Dynamic:
      return head + "carries '" + c.name + "', whose shape grows or shrinks with the run, in the session's memory "
             "(a dynamic tensor, handed from each iteration to the next): no slot";
  }
  return head;
}

// "relu_out (view), y (in place)": who else is in a storage's bytes.
std::string shared_with(const Storage& s) {
  std::string out;
  for (const PlannedBuffer* m : s.members) out += (out.empty() ? "" : ", ") + m->label() + " (" + alias_name(m->alias) + ")";
  return out;
}

constexpr size_t kRefusalsInText = 20;

// Bytes of the main-graph inputs that each run reads from the caller's buffers.
uint64_t external_input_bytes(const MemoryPlan& plan) {
  uint64_t bytes = 0;
  if (!plan.graphs.empty())
    for (const auto& b : plan.graphs[0].buffers)
      if (b.external && b.group < 0) bytes += b.size;
  return bytes;
}

// How many nodes run on oneDNN and how many on memplan's own loops, then every node on a oneDNN
// reference kernel (a layout or fusion memplan should have chosen otherwise), by name.
std::string kernels_text(const MemoryPlan& plan) {
  if (plan.kernels.empty()) return "";
  size_t own = 0;
  for (const KernelImplementation& k : plan.kernels) own += k.implementation.rfind("memplan", 0) == 0;
  const std::vector<const KernelImplementation*> ref = reference_kernels(plan);
  std::string out = "kernels: " + std::to_string(plan.kernels.size() - own) + " on oneDNN" +
                    (plan.isa.empty() ? "" : " (" + plan.isa + ")") + ", " + std::to_string(own) +
                    " on memplan's own loops; " +
                    (ref.empty() ? "no oneDNN reference (ref:) kernel\n"
                                 : std::to_string(ref.size()) + " on oneDNN reference (ref:) kernels:\n");
  for (const KernelImplementation* k : ref) out += "  " + k->node + " in " + k->graph + ": " + k->implementation + "\n";
  // The nodes on a leaner variant than their fastest kernel, and the scratchpad bytes it saved.
  std::string leaner;
  size_t count = 0;
  for (const KernelImplementation& k : plan.kernels)
    if (k.scratchpad_bytes != k.fastest_scratchpad_bytes) {
      ++count;
      leaner += "  " + k.node + " in " + k.graph + ": " + k.implementation + "; scratchpad " +
                std::to_string(k.scratchpad_bytes) + " bytes, the fastest kernel's " +
                std::to_string(k.fastest_scratchpad_bytes) + "\n";
    }
  if (count) out += "leaner kernels: " + std::to_string(count) + " nodes run a leaner variant than their fastest kernel:\n" + leaner;
  return out;
}

// What timing leaner kernels cost the compile (none for --prefer speed or memory, which time nothing).
std::string tuning_text(const KernelTuning& t) {
  if (t.budget_seconds <= 0) return "";
  std::ostringstream o;
  o << std::fixed << std::setprecision(2) << "kernel choice: " << t.candidates_timed << " leaner kernels timed for "
    << t.nodes_timed << " nodes in " << t.seconds << " s of a " << t.budget_seconds << " s budget; "
    << t.candidates_skipped << " not run (estimated unable to win, or past the budget)\n";
  return o.str();
}

// Runs of first layers in tiles: where they are, their tiles, and what computing the halos again costs.
std::string patch_regions_text(const MemoryPlan& p) {
  if (p.patch_regions.empty()) return "";
  std::ostringstream o;
  o << "patch regions (layers run tile by tile; their tensors only at tile height, in the region's scratchpad):\n";
  for (const PatchRegion& r : p.patch_regions)
    o << "  " << r.first << " .. " << r.last << ": " << r.layers << " layers in " << r.tiles << " tiles of " << r.tile_rows
      << " output rows" << (r.keep_rows ? " (rows kept across tiles)" : "") << ", each holding up to " << r.input_rows
      << " input rows; tile frame " << r.tile_frame_bytes
      << " bytes; " << r.recomputed_macs << " multiply-adds recomputed in halos (" << std::fixed << std::setprecision(1)
      << (r.macs ? 100.0 * static_cast<double>(r.recomputed_macs) / static_cast<double>(r.macs) : 0.0)
      << "% of the region's " << r.macs << ")\n";
  return o.str();
}

// Whether the Winograd convolution runs its Winograd kernel, not the direct one it gave way to.
bool runs_winograd(const MemoryPlan& p, const WinogradConv& w) {
  const std::string node = "Conv node '" + w.node + "'";
  return std::any_of(p.kernels.begin(), p.kernels.end(), [&](const KernelImplementation& k) {
    return k.node == node && k.implementation.find("wino") != std::string::npos;
  });
}

// Which layouts --prefer memory kept, and the arena the other choice had.
std::string layouts_text(const MemoryPlan& p) {
  if (p.other_layouts_arena_bytes == 0) return p.plain_layouts ? "layouts: plain\n" : "";
  std::ostringstream o;
  if (p.plain_layouts)
    o << "layouts: plain, the smaller arena (" << p.other_layouts_arena_bytes
      << " bytes with oneDNN's blocked and channels-last layouts)\n";
  else
    o << "layouts: oneDNN's blocked and channels-last, the smaller arena or a tie (" << p.other_layouts_arena_bytes
      << " bytes plain)\n";
  return o.str();
}

// Convolutions in Winograd's form: how many run it, the weight bytes they add, and how many gave way.
std::string winograd_text(const MemoryPlan& p) {
  if (p.winograd_convs.empty()) return "";
  size_t running = 0;
  uint64_t added = 0;
  for (const WinogradConv& w : p.winograd_convs)
    if (runs_winograd(p, w)) ++running, added += w.added_bytes;
  std::ostringstream o;
  o << "winograd: " << running << " of " << p.winograd_convs.size()
    << " convolutions chosen run Winograd's kernels, their transformed weights " << added
    << " bytes over their own; " << p.winograd_convs.size() - running
    << " run the direct kernel (their scratchpad set the arena's peak, or this machine has no Winograd kernel)\n";
  return o.str();
}

uint64_t scratchpad_bytes(const MemoryPlan& plan) {
  uint64_t most = 0;
  for (const auto& g : plan.graphs)
    for (const auto& b : g.buffers)
      if (b.kind == BufferKind::Scratchpad) most = std::max(most, b.size);
  return most;
}

}  // namespace

const char* alias_name(AliasKind k) {
  switch (k) {
    case AliasKind::View: return "view";
    case AliasKind::InPlace: return "in place";
    case AliasKind::ConcatSlice: return "concat slice";
    case AliasKind::Concat: return "concatenated in place";
    case AliasKind::None: break;
  }
  return "own";
}

std::string plan_peak_summary(const MemoryPlan& plan, size_t most_buffers) {
  const Peak peak = main_peak(plan);
  std::string out = "step " + std::to_string(peak.step) + ":";
  for (size_t i = 0; i < peak.live.size() && i < most_buffers; ++i)
    out += std::string(i ? "," : "") + " '" + peak.live[i].root->label() + "' (" + std::to_string(peak.live[i].root->size) +
           " bytes)";
  if (peak.live.size() > most_buffers) out += ", ...";
  return out;
}

std::string plan_report_text(const MemoryPlan& p) {
  std::ostringstream o;
  o << "memory plan for " << p.model_path << "\n";
  o << "  arena          " << p.arena_bytes << " bytes (strategy " << p.strategy << ", kept "
    << p.chosen_strategy << ")\n";
  o << "  lower bound    " << p.lower_bound_bytes << " bytes (arena / lower bound = "
    << ratio(p.arena_bytes, p.lower_bound_bytes) << "; every tensor its own bytes)\n";
  o << "  aliased bound  " << p.aliased_bound_bytes << " bytes (the same bound with storage groups; arena / aliased bound = "
    << ratio(p.arena_bytes, p.aliased_bound_bytes) << ")\n";
  o << "  naive          " << p.naive_bytes << " bytes (every tensor its own memory)\n";
  o << "  per-subgraph   " << p.per_subgraph_bytes << " bytes (every graph its own memory)\n";
  o << "  weights        " << p.weights_bytes << " bytes (read-only, outside the arena)\n";
  o << "  scratchpad     " << scratchpad_bytes(p) << " bytes (largest kernel scratchpad, inside the arena)\n";
  o << "  alignment      " << p.alignment << " bytes\n";
  if (p.external_inputs) o << "  inputs         " << external_input_bytes(p) << " bytes (external: read from the caller's buffers, outside the arena)\n";
  o << "strategies (arena bytes):";
  for (const auto& [name, bytes] : p.strategy_bytes) o << "  " << name << " " << bytes;
  o << "\ngraphs (frame bytes at absolute offset; lower bound):\n";
  for (const auto& g : p.graphs) {
    int depth = 0;
    for (int32_t at = g.parent; at >= 0; at = p.graphs[static_cast<size_t>(at)].parent) ++depth;
    o << std::string(2 + 2 * static_cast<size_t>(depth), ' ') << g.path << ": frame " << g.frame_bytes << " at "
      << g.base_offset << "; lower bound " << g.lower_bound_bytes << "; " << g.buffers.size() << " buffers\n";
    for (const auto& r : g.regions)
      for (const auto& c : r.carried) o << std::string(4 + 2 * static_cast<size_t>(depth), ' ') << slot_text(r, c) << "\n";
    for (const auto& b : g.buffers)
      if (b.bound_output >= 0)
        o << std::string(4 + 2 * static_cast<size_t>(depth), ' ') << "'" << b.name << "' (" << b.size
          << " bytes) lives in the If output that branch output " << b.bound_output
          << " is written into, at +" << b.offset << ": no bytes of the frame\n";
  }
  if (p.dynamic_tensors.size() > 0) {
    o << "dynamic tensors (size known only at run time; allocated by the session, outside the arena):\n";
    for (const auto& d : p.dynamic_tensors) {
      const bool known = d.graph > 0 && static_cast<size_t>(d.graph) < p.graphs.size();
      o << "  '" << d.name << "' " << d.shape << (d.producer.empty() ? ", a graph input" : " from " + d.producer)
        << (known ? " in " + p.graphs[static_cast<size_t>(d.graph)].path : "")
        << (d.container.empty() ? "; a bound for it would plan it in the arena\n"
                                : ": its tensors are the session's copies\n");
    }
  }
  size_t views = 0, in_place = 0, slices = 0, refused = 0;
  for (const auto& g : p.graphs) {
    for (const auto& b : g.buffers) {
      views += b.alias == AliasKind::View;
      in_place += b.alias == AliasKind::InPlace;
      slices += b.alias == AliasKind::ConcatSlice || b.alias == AliasKind::Concat;
    }
    refused += g.refused_aliases.size();
  }
  o << "storage groups: " << views << " views, " << in_place << " outputs in place and " << slices
    << " concatenated in place share bytes; " << refused << " aliases refused\n";
  size_t shown = 0;
  for (const auto& g : p.graphs)
    for (const auto& r : g.refused_aliases)
      if (shown++ < kRefusalsInText)
        o << "  refused: '" << r.value << "' over '" << r.source << "' at " << r.node << ": " << r.reason << "\n";
  if (refused > kRefusalsInText) o << "  ... " << refused - kRefusalsInText << " more (--report json lists them all)\n";
  o << layouts_text(p) << patch_regions_text(p) << winograd_text(p) << kernels_text(p) << tuning_text(p.tuning);
  Peak peak = main_peak(p);
  o << "peak of the main graph: step " << peak.step << ", " << peak.bytes << " bytes live:\n";
  for (const auto& s : peak.live) {
    const PlannedBuffer* b = s.root;
    o << "  " << b->label() << "  " << b->size << " bytes  " << (b->producer.empty() ? "(input)" : "from " + b->producer)
      << (b->upper_bound ? "  (upper bound)" : "") << (s.members.empty() ? "" : "  shared with " + shared_with(s)) << "\n";
  }
  return o.str();
}

std::string plan_report_json(const MemoryPlan& p, const std::string& extra) {
  std::ostringstream o;
  o << "{\"model\": " << json_string(p.model_path) << ", \"model_sha256\": " << json_string(p.model_sha256)
    << ", \"arena_bytes\": " << p.arena_bytes << ", \"lower_bound_bytes\": " << p.lower_bound_bytes
    << ", \"aliased_bound_bytes\": " << p.aliased_bound_bytes
    << ", \"naive_bytes\": " << p.naive_bytes << ", \"per_subgraph_bytes\": " << p.per_subgraph_bytes
    << ", \"weights_bytes\": " << p.weights_bytes << ", \"scratchpad_bytes\": " << scratchpad_bytes(p)
    << ", \"alignment\": " << p.alignment << ", \"external_inputs\": " << (p.external_inputs ? "true" : "false")
    << ", \"external_input_bytes\": " << external_input_bytes(p) << ", \"strategy\": " << json_string(p.strategy)
    << ", \"chosen_strategy\": " << json_string(p.chosen_strategy) << ", \"strategies\": {";
  bool first = true;
  for (const auto& [name, bytes] : p.strategy_bytes) {
    o << (first ? "" : ", ") << json_string(name) << ": " << bytes;
    first = false;
  }
  Peak peak = main_peak(p);
  o << "}, \"peak\": {\"step\": " << peak.step << ", \"bytes\": " << peak.bytes << ", \"buffers\": [";
  for (size_t i = 0; i < peak.live.size(); ++i) {
    const Storage& s = peak.live[i];
    o << (i ? ", " : "") << "{\"name\": " << json_string(s.root->label()) << ", \"bytes\": " << s.root->size
      << ", \"producer\": " << json_string(s.root->producer) << ", \"shared_with\": [";
    for (size_t k = 0; k < s.members.size(); ++k)
      o << (k ? ", " : "") << "{\"name\": " << json_string(s.members[k]->label()) << ", \"alias\": "
        << json_string(alias_name(s.members[k]->alias)) << "}";
    o << "]}";
  }
  o << "]}, \"dynamic_tensors\": [";
  for (size_t i = 0; i < p.dynamic_tensors.size(); ++i) {
    const auto& d = p.dynamic_tensors[i];
    o << (i ? ", " : "") << "{\"name\": " << json_string(d.name) << ", \"producer\": " << json_string(d.producer)
      << ", \"shape\": " << json_string(d.shape) << ", \"graph\": " << d.graph;
    if (!d.container.empty()) o << ", \"container\": " << json_string(d.container);
    o << "}";
  }
  const KernelTuning& t = p.tuning;
  o << "], \"isa\": " << json_string(p.isa) << ", \"kernel_tuning\": {\"budget_seconds\": " << t.budget_seconds
    << ", \"seconds\": " << t.seconds << ", \"nodes_timed\": " << t.nodes_timed << ", \"candidates_timed\": "
    << t.candidates_timed << ", \"candidates_skipped\": " << t.candidates_skipped << "}";
  o << ", \"plain_layouts\": " << (p.plain_layouts ? "true" : "false")
    << ", \"other_layouts_arena_bytes\": " << p.other_layouts_arena_bytes;
  o << ", \"patch_regions\": [";
  for (size_t i = 0; i < p.patch_regions.size(); ++i) {
    const PatchRegion& r = p.patch_regions[i];
    o << (i ? ", " : "") << "{\"first\": " << json_string(r.first) << ", \"last\": " << json_string(r.last)
      << ", \"tile_rows\": " << r.tile_rows << ", \"keep_rows\": " << (r.keep_rows ? "true" : "false")
      << ", \"layers\": " << r.layers << ", \"tiles\": " << r.tiles
      << ", \"input_rows\": " << r.input_rows << ", \"tile_frame_bytes\": " << r.tile_frame_bytes
      << ", \"macs\": " << r.macs << ", \"recomputed_macs\": " << r.recomputed_macs << "}";
  }
  o << "], \"winograd_convs\": [";
  for (size_t i = 0; i < p.winograd_convs.size(); ++i) {
    const WinogradConv& w = p.winograd_convs[i];
    o << (i ? ", " : "") << "{\"node\": " << json_string(w.node) << ", \"added_bytes\": " << w.added_bytes
      << ", \"output_pixels\": " << w.output_pixels << ", \"runs\": " << (runs_winograd(p, w) ? "true" : "false") << "}";
  }
  o << "], \"reference_kernels\": " << reference_kernels(p).size() << ", \"kernels\": [";
  for (size_t i = 0; i < p.kernels.size(); ++i) {
    const KernelImplementation& k = p.kernels[i];
    o << (i ? ", " : "") << "{\"node\": " << json_string(k.node) << ", \"graph\": " << json_string(k.graph)
      << ", \"implementation\": " << json_string(k.implementation) << ", \"scratchpad_bytes\": " << k.scratchpad_bytes
      << ", \"fastest_scratchpad_bytes\": " << k.fastest_scratchpad_bytes << "}";
  }
  o << "], \"graphs\": [";
  for (size_t gi = 0; gi < p.graphs.size(); ++gi) {
    const auto& g = p.graphs[gi];
    o << (gi ? ", " : "") << "{\"path\": " << json_string(g.path) << ", \"parent\": " << g.parent
      << ", \"frame_bytes\": " << g.frame_bytes << ", \"base_offset\": " << g.base_offset
      << ", \"lower_bound_bytes\": " << g.lower_bound_bytes << ", \"aliased_bound_bytes\": " << g.aliased_bound_bytes
      << ", \"naive_bytes\": " << g.naive_bytes << ", \"refused_aliases\": [";
    for (size_t k = 0; k < g.refused_aliases.size(); ++k) {
      const RefusedAlias& r = g.refused_aliases[k];
      o << (k ? ", " : "") << "{\"value\": " << json_string(r.value) << ", \"source\": " << json_string(r.source)
        << ", \"node\": " << json_string(r.node) << ", \"reason\": " << json_string(r.reason) << "}";
    }
    o << "], \"loop_slots\": [";
    bool first_slot = true;
    for (const auto& r : g.regions)
      for (const auto& c : r.carried) {
        o << (first_slot ? "" : ", ") << "{\"node\": " << json_string(r.node) << ", \"value\": " << json_string(c.name)
          << ", \"bytes\": " << c.size << ", \"home\": " << json_string(home_name(c.home)) << ", \"offsets\": [";
        if (c.home == SlotHome::TwoSlots) o << c.slot0 << ", " << c.slot1;
        else if (c.home == SlotHome::OneSlot) o << c.slot0;
        o << "], \"writer_step\": " << c.writer << ", \"grows\": " << (c.grows ? "true" : "false") << "}";
        first_slot = false;
      }
    o << "], \"leaner_kernel_steps\": [";
    for (size_t k = 0; k < g.leaner_kernels.size(); ++k) o << (k ? ", " : "") << g.leaner_kernels[k];
    o << "], \"buffers\": [";
    for (size_t bi = 0; bi < g.buffers.size(); ++bi) {
      const auto& b = g.buffers[bi];
      o << (bi ? ", " : "") << "{\"name\": " << json_string(b.label()) << ", \"bytes\": " << b.size
        << ", \"offset\": " << b.offset << ", \"first\": " << b.first << ", \"last\": " << b.last
        << ", \"group\": " << b.group << ", \"alias\": " << json_string(alias_name(b.alias))
        << ", \"bound_output\": " << b.bound_output << ", \"external\": " << (b.external ? "true" : "false") << "}";
    }
    o << "]}";
  }
  o << "]";
  if (!extra.empty()) o << ", " << extra;
  o << "}\n";
  return o.str();
}

}  // namespace memplan
