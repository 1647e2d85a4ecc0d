#include "plan/plan_file.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "memplan/error.h"
#include "plan_file.pb.h"
#include "util/sha256.h"

namespace memplan {
namespace {

constexpr char kMagic[] = "MEMPLAN\n";  // 8 bytes
constexpr size_t kMagicSize = 8;
constexpr size_t kLengthSize = 8;
constexpr size_t kDigestSize = 64;  // hex SHA-256 of the payload

// `offset + size <= limit`, without overflow.
bool fits(uint64_t offset, uint64_t size, uint64_t limit) { return offset <= limit && size <= limit - offset; }

// A storage group member names a root of its own graph that is a tensor holding its bytes.
template <typename Invalid>
void check_group(const GraphPlan& g, const PlannedBuffer& b, const std::string& where, const Invalid& invalid) {
  if ((b.group < 0) != (b.alias == AliasKind::None) || b.group < -1)
    invalid(where + ": buffer '" + b.label() + "' has an alias kind but no group, or a group but no alias kind");
  if (b.group < 0) return;
  if (static_cast<size_t>(b.group) >= g.buffers.size())
    invalid(where + ": buffer '" + b.label() + "' names group " + std::to_string(b.group) + ", past the buffers");
  const PlannedBuffer& root = g.buffers[static_cast<size_t>(b.group)];
  if (b.kind != BufferKind::Tensor || root.kind != BufferKind::Tensor || root.group != -1 || b.offset < root.offset ||
      b.size > root.size || b.offset - root.offset > root.size - b.size || b.bound_output != root.bound_output ||
      b.external != root.external)
    invalid(where + ": buffer '" + b.label() + "' is not inside the tensor its group names");
}

// A checksum only proves the file is what some writer wrote; the structure is checked before
// anything walks it: graphs form a tree whose parents come first (so no walk up the parents can
// loop), every index is in range, every buffer, frame and slot lies inside what holds it.
void check_structure(const MemoryPlan& p, const std::string& path) {
  auto invalid = [&](const std::string& why) { fail(path + ": plan file is invalid: " + why); };
  if (p.alignment == 0 || (p.alignment & (p.alignment - 1)) != 0) invalid("alignment is not a power of two");
  if (p.graphs.empty()) invalid("it has no graphs");
  const auto graphs = static_cast<int32_t>(p.graphs.size());
  for (int32_t gi = 0; gi < graphs; ++gi) {
    const int32_t parent = p.graphs[static_cast<size_t>(gi)].parent;
    if (gi == 0 ? parent != -1 : (parent < 0 || parent >= gi))
      invalid("graph " + std::to_string(gi) + " names parent " + std::to_string(parent) +
              " (a graph's parent comes before it)");
  }
  for (int32_t gi = 0; gi < graphs; ++gi) {
    const GraphPlan& g = p.graphs[static_cast<size_t>(gi)];
    const std::string where = "graph " + std::to_string(gi);
    if (!fits(g.base_offset, g.frame_bytes, p.arena_bytes)) invalid(where + ": its frame leaves the arena");
    if (g.num_steps < 0) invalid(where + ": negative step count");
    for (const PlannedBuffer& b : g.buffers) {
      // A buffer in an If output's bytes or the caller's: the verifier checks it against those.
      const bool in_frame = b.in_frame();
      if ((in_frame && !fits(b.offset, b.size, g.frame_bytes)) || b.first < 0 || b.last < b.first || b.bound_output < -1 ||
          (!in_frame && b.kind != BufferKind::Tensor))
        invalid(where + ": buffer '" + b.label() + "' lies outside its frame or has no lifetime");
      if (b.node < -1 || b.node >= g.num_steps || (b.kind != BufferKind::Tensor && b.node < 0) ||
          (b.kind == BufferKind::Tensor && b.value < 0))
        invalid(where + ": buffer '" + b.label() + "' names no value or step of its graph");
      check_group(g, b, where, invalid);
    }
    for (int32_t step : g.leaner_kernels)
      if (step < 0 || step >= g.num_steps) invalid(where + ": a leaner kernel at step " + std::to_string(step) + ", past its nodes");
    for (const Region& r : g.regions) {
      if (r.buffer < 0 || static_cast<size_t>(r.buffer) >= g.buffers.size())
        invalid(where + ": region of '" + r.node + "' has no buffer");
      const uint64_t region_bytes = g.buffers[static_cast<size_t>(r.buffer)].size;
      for (int32_t s : r.subgraphs)
        if (s <= gi || s >= graphs || p.graphs[static_cast<size_t>(s)].parent != gi)
          invalid(where + ": region of '" + r.node + "' names graph " + std::to_string(s) + ", not a child of it");
      for (const CarriedSlots& c : r.carried) {
        if (c.home > SlotHome::Dynamic) invalid(where + ": a slot of '" + c.name + "' has an unknown home");
        if (in_region(c.home) && (!fits(c.slot0, c.size, region_bytes) || !fits(c.slot1, c.size, region_bytes)))
          invalid(where + ": a slot of '" + c.name + "' lies outside its region");
      }
    }
  }
  for (const DynamicTensor& d : p.dynamic_tensors)
    if (d.graph < 0 || d.graph >= graphs) invalid("dynamic tensor '" + d.name + "' names no graph");
}

// The protobuf's nested shapes, both ways: the typed plan is what everything else works on.
template <typename Dims>
std::vector<int64_t> dims_of(const Dims& d) {
  return {d.begin(), d.end()};
}

template <typename Named>
void add_named(const std::map<std::string, std::vector<int64_t>>& from, Named* to) {
  for (const auto& [name, dims] : from) {
    auto* nd = to->Add();
    nd->set_name(name);
    for (int64_t d : dims) nd->add_dims(d);
  }
}

planfile::Plan to_proto(const MemoryPlan& p) {
  planfile::Plan out;
  out.set_format_version(kPlanFormatVersion);
  out.set_model_sha256(p.model_sha256);
  out.set_model_path(p.model_path);
  add_named(p.shapes.input_shapes, out.mutable_input_shapes());
  for (const auto& [name, value] : p.shapes.dims) (*out.mutable_dims())[name] = value;
  add_named(p.shapes.bounds, out.mutable_bounds());
  out.set_static_only(p.shapes.static_only);
  out.set_plain_layouts(p.plain_layouts);
  out.set_other_layouts_arena_bytes(p.other_layouts_arena_bytes);
  for (const WinogradConv& w : p.winograd_convs) {
    planfile::WinogradConv& pw = *out.add_winograd_convs();
    pw.set_node(w.node);
    pw.set_added_bytes(w.added_bytes);
    pw.set_output_pixels(w.output_pixels);
    pw.set_tile(w.tile);
  }
  for (const PatchRegion& r : p.patch_regions) {
    planfile::PatchRegion& pr = *out.add_patch_regions();
    pr.set_first(r.first);
    pr.set_last(r.last);
    pr.set_tile_rows(r.tile_rows);
    pr.set_keep_rows(r.keep_rows);
    pr.set_layers(r.layers);
    pr.set_tiles(r.tiles);
    pr.set_input_rows(r.input_rows);
    pr.set_tile_frame_bytes(r.tile_frame_bytes);
    pr.set_macs(r.macs);
    pr.set_recomputed_macs(r.recomputed_macs);
  }
  out.set_alignment(p.alignment);
  out.set_external_inputs(p.external_inputs);
  out.set_strategy(p.strategy);
  out.set_chosen_strategy(p.chosen_strategy);
  out.set_arena_bytes(p.arena_bytes);
  out.set_lower_bound_bytes(p.lower_bound_bytes);
  out.set_aliased_bound_bytes(p.aliased_bound_bytes);
  out.set_naive_bytes(p.naive_bytes);
  out.set_per_subgraph_bytes(p.per_subgraph_bytes);
  out.set_weights_bytes(p.weights_bytes);
  for (const auto& [name, bytes] : p.strategy_bytes) (*out.mutable_strategy_bytes())[name] = bytes;
  for (const GraphPlan& g : p.graphs) {
    planfile::GraphPlan& pg = *out.add_graphs();
    pg.set_parent(g.parent);
    pg.set_owner_node(g.owner_node);
    pg.set_owner_attribute(g.owner_attribute);
    pg.set_path(g.path);
    pg.set_frame_bytes(g.frame_bytes);
    pg.set_lower_bound_bytes(g.lower_bound_bytes);
    pg.set_aliased_bound_bytes(g.aliased_bound_bytes);
    for (int32_t step : g.leaner_kernels) pg.add_leaner_kernels(step);
    for (const RefusedAlias& r : g.refused_aliases) {
      planfile::RefusedAlias& pr = *pg.add_refused_aliases();
      pr.set_value(r.value);
      pr.set_source(r.source);
      pr.set_node(r.node);
      pr.set_reason(r.reason);
    }
    pg.set_naive_bytes(g.naive_bytes);
    pg.set_base_offset(g.base_offset);
    pg.set_num_steps(g.num_steps);
    for (const auto& [name, bytes] : g.strategy_bytes) (*pg.mutable_strategy_bytes())[name] = bytes;
    for (const PlannedBuffer& b : g.buffers) {
      planfile::Buffer& pb = *pg.add_buffers();
      pb.set_kind(static_cast<planfile::Buffer::Kind>(b.kind));
      pb.set_value(b.value);
      pb.set_node(b.node);
      pb.set_name(b.name);
      pb.set_producer(b.producer);
      pb.set_size(b.size);
      pb.set_offset(b.offset);
      pb.set_first(b.first);
      pb.set_last(b.last);
      pb.set_upper_bound(b.upper_bound);
      pb.set_group(b.group);
      pb.set_alias(static_cast<planfile::Buffer::Alias>(b.alias));
      pb.set_bound_output_plus_one(b.bound_output + 1);
      pb.set_external(b.external);
    }
    for (const Binding& b : g.bindings) {
      planfile::Binding& pb = *pg.add_bindings();
      pb.set_kind(static_cast<planfile::Binding::Kind>(b.kind));
      pb.set_name(b.name);
      pb.set_parent_value(b.parent_value);
      pb.set_slot(b.slot);
    }
    for (const Region& r : g.regions) {
      planfile::Region& pr = *pg.add_regions();
      pr.set_node(r.node);
      pr.set_op_type(r.op_type);
      pr.set_step(r.step);
      pr.set_buffer(r.buffer);
      for (int32_t s : r.subgraphs) pr.add_subgraphs(s);
      for (const CarriedSlots& c : r.carried) {
        planfile::CarriedSlots& pc = *pr.add_carried();
        pc.set_slot(c.slot);
        pc.set_name(c.name);
        pc.set_size(c.size);
        pc.set_slot0(c.slot0);
        pc.set_slot1(c.slot1);
        pc.set_home(static_cast<uint32_t>(c.home));
        pc.set_writer(c.writer);
        pc.set_grows(c.grows);
      }
    }
  }
  for (const KernelImplementation& k : p.kernels) {
    planfile::KernelImplementation& pk = *out.add_kernels();
    pk.set_node(k.node);
    pk.set_graph(k.graph);
    pk.set_implementation(k.implementation);
    pk.set_scratchpad_bytes(k.scratchpad_bytes);
    pk.set_fastest_scratchpad_bytes(k.fastest_scratchpad_bytes);
  }
  out.set_isa(p.isa);
  planfile::KernelTuning& pt = *out.mutable_tuning();
  pt.set_budget_seconds(p.tuning.budget_seconds);
  pt.set_seconds(p.tuning.seconds);
  pt.set_nodes_timed(p.tuning.nodes_timed);
  pt.set_candidates_timed(p.tuning.candidates_timed);
  pt.set_candidates_skipped(p.tuning.candidates_skipped);
  for (const DynamicTensor& d : p.dynamic_tensors) {
    planfile::DynamicTensor& pd = *out.add_dynamic_tensors();
    pd.set_graph(d.graph);
    pd.set_value(d.value);
    pd.set_name(d.name);
    pd.set_producer(d.producer);
    pd.set_shape(d.shape);
    pd.set_dtype(d.dtype);
    pd.set_container(d.container);
  }
  return out;
}

MemoryPlan from_proto(const planfile::Plan& in) {
  const uint32_t version = in.format_version();
  MemoryPlan p;
  p.model_sha256 = in.model_sha256();
  p.model_path = in.model_path();
  for (const auto& nd : in.input_shapes()) p.shapes.input_shapes[nd.name()] = dims_of(nd.dims());
  for (const auto& [name, value] : in.dims()) p.shapes.dims[name] = value;
  for (const auto& nd : in.bounds()) p.shapes.bounds[nd.name()] = dims_of(nd.dims());
  p.shapes.static_only = in.static_only();
  for (const planfile::PatchRegion& r : in.patch_regions())
    p.patch_regions.push_back({r.first(), r.last(), r.tile_rows(), r.keep_rows(), r.layers(), r.tiles(), r.input_rows(),
                               r.tile_frame_bytes(), r.macs(), r.recomputed_macs()});
  for (const planfile::WinogradConv& w : in.winograd_convs())
    p.winograd_convs.push_back({w.node(), w.tile(), w.added_bytes(), w.output_pixels()});
  p.plain_layouts = in.plain_layouts();  // false before format 9, when every plan had the layouts
  p.other_layouts_arena_bytes = in.other_layouts_arena_bytes();
  p.alignment = in.alignment();
  p.external_inputs = version >= 6 && in.external_inputs();
  p.strategy = in.strategy();
  p.chosen_strategy = in.chosen_strategy();
  p.arena_bytes = in.arena_bytes();
  p.lower_bound_bytes = in.lower_bound_bytes();
  p.aliased_bound_bytes = in.aliased_bound_bytes();
  p.naive_bytes = in.naive_bytes();
  p.per_subgraph_bytes = in.per_subgraph_bytes();
  p.weights_bytes = in.weights_bytes();
  p.strategy_bytes = {in.strategy_bytes().begin(), in.strategy_bytes().end()};
  for (const planfile::GraphPlan& pg : in.graphs()) {
    GraphPlan& g = p.graphs.emplace_back();
    g.parent = pg.parent();
    g.owner_node = pg.owner_node();
    g.owner_attribute = pg.owner_attribute();
    g.path = pg.path();
    g.frame_bytes = pg.frame_bytes();
    g.lower_bound_bytes = pg.lower_bound_bytes();
    g.aliased_bound_bytes = pg.aliased_bound_bytes();
    g.leaner_kernels.assign(pg.leaner_kernels().begin(), pg.leaner_kernels().end());
    for (const planfile::RefusedAlias& pr : pg.refused_aliases())
      g.refused_aliases.push_back({pr.value(), pr.source(), pr.node(), pr.reason()});
    g.naive_bytes = pg.naive_bytes();
    g.base_offset = pg.base_offset();
    g.num_steps = pg.num_steps();
    g.strategy_bytes = {pg.strategy_bytes().begin(), pg.strategy_bytes().end()};
    for (const planfile::Buffer& pb : pg.buffers())
      g.buffers.push_back({static_cast<BufferKind>(pb.kind()), pb.value(), pb.node(), pb.name(), pb.producer(), pb.size(),
                           pb.offset(), pb.first(), pb.last(), pb.upper_bound(),
                           version >= 3 ? pb.group() : -1, static_cast<AliasKind>(pb.alias()),
                           version >= 5 ? pb.bound_output_plus_one() - 1 : -1, version >= 6 && pb.external()});
    for (const planfile::Binding& pb : pg.bindings())
      g.bindings.push_back({static_cast<Binding::Kind>(pb.kind()), pb.name(), pb.parent_value(), pb.slot()});
    for (const planfile::Region& pr : pg.regions()) {
      Region& r = g.regions.emplace_back();
      r.node = pr.node();
      r.op_type = pr.op_type();
      r.step = pr.step();
      r.buffer = pr.buffer();
      r.subgraphs.assign(pr.subgraphs().begin(), pr.subgraphs().end());
      for (const planfile::CarriedSlots& pc : pr.carried()) {
        // Before format 4 every slot but the counter's was two; the counter's one (slot0 == slot1).
        const SlotHome home = version >= 4 ? static_cast<SlotHome>(std::min<uint32_t>(pc.home(), 255))
                              : pc.slot0() == pc.slot1() ? SlotHome::OneSlot
                                                         : SlotHome::TwoSlots;
        r.carried.push_back(
            {pc.slot(), pc.name(), pc.size(), pc.slot0(), pc.slot1(), home, version >= 4 ? pc.writer() : -1, pc.grows()});
      }
    }
  }
  for (const planfile::DynamicTensor& pd : in.dynamic_tensors())
    p.dynamic_tensors.push_back({pd.graph(), pd.value(), pd.name(), pd.producer(), pd.shape(), pd.dtype(), pd.container()});
  for (const planfile::KernelImplementation& pk : in.kernels())
    p.kernels.push_back({pk.node(), pk.graph(), pk.implementation(), pk.scratchpad_bytes(), pk.fastest_scratchpad_bytes()});
  p.isa = in.isa();
  const planfile::KernelTuning& pt = in.tuning();
  p.tuning = {pt.budget_seconds(), pt.seconds(), pt.nodes_timed(), pt.candidates_timed(), pt.candidates_skipped()};
  return p;
}

}  // namespace

void write_file_atomically(const std::string& path, const std::string& contents) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) fail(path + ": cannot write: " + std::strerror(errno));
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    out.close();
    if (!out) {
      std::remove(tmp.c_str());
      fail(path + ": cannot write: " + std::strerror(errno));
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    fail(path + ": cannot write: " + ec.message());
  }
}

void write_plan_file(const MemoryPlan& plan, const std::string& path) {
  std::string payload;
  if (!to_proto(plan).SerializeToString(&payload)) fail_internal("cannot serialize the plan");
  std::string file(kMagic, kMagicSize);
  uint64_t n = payload.size();
  for (size_t i = 0; i < kLengthSize; ++i) file += static_cast<char>((n >> (8 * i)) & 0xff);
  file += payload;
  file += sha256_hex(payload);
  write_file_atomically(path, file);
}

MemoryPlan read_plan_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path + ": cannot open: " + std::strerror(errno));
  std::ostringstream buf;
  buf << in.rdbuf();
  const std::string file = buf.str();
  if (file.size() < kMagicSize || file.compare(0, kMagicSize, kMagic, kMagicSize) != 0)
    fail(path + ": not a memplan plan file (bad magic)");
  if (file.size() < kMagicSize + kLengthSize + kDigestSize) fail(path + ": plan file is truncated");
  uint64_t n = 0;
  for (size_t i = 0; i < kLengthSize; ++i) n |= uint64_t(static_cast<unsigned char>(file[kMagicSize + i])) << (8 * i);
  const uint64_t available = file.size() - kMagicSize - kLengthSize - kDigestSize;
  if (n != available) fail(path + ": plan file is truncated or has trailing bytes");
  const std::string payload = file.substr(kMagicSize + kLengthSize, n);
  if (sha256_hex(payload) != file.substr(kMagicSize + kLengthSize + n))
    fail(path + ": plan file is corrupt (checksum mismatch)");
  planfile::Plan plan;
  if (!plan.ParseFromString(payload)) fail(path + ": plan file is corrupt (cannot parse)");
  if (plan.format_version() < kOldestPlanFormatVersion || plan.format_version() > kPlanFormatVersion)
    fail_unsupported(path + ": plan format version " + std::to_string(plan.format_version()) +
                     " is not supported (this memplan reads versions " + std::to_string(kOldestPlanFormatVersion) +
                     " to " + std::to_string(kPlanFormatVersion) + "); compile the model again");
  // Enum fields hold any integer on the wire: a kind this reader does not know is refused.
  for (const auto& g : plan.graphs()) {
    for (const auto& b : g.buffers())
      if (!planfile::Buffer::Kind_IsValid(b.kind()) || !planfile::Buffer::Alias_IsValid(b.alias()))
        fail(path + ": plan file is invalid: a buffer of unknown kind");
    for (const auto& b : g.bindings())
      if (!planfile::Binding::Kind_IsValid(b.kind())) fail(path + ": plan file is invalid: a binding of unknown kind");
  }
  MemoryPlan typed = from_proto(plan);
  check_structure(typed, path);
  return typed;
}

}  // namespace memplan
