// Guard mode (`--check-memory`): every arena buffer is checksummed when its producer finishes and
// checked again before each read, and filled with a poison pattern once it is dead, so a plan or
// kernel that writes over a live neighbour is caught and named instead of giving a wrong answer.
#include <cstring>

#include "memplan/error.h"
#include "runtime/session_impl.h"

namespace memplan {

namespace {

constexpr std::byte kPoison{0xA5};

// (A sequence or optional is the session's own copies, written by its op only.) Arena buffers, dynamic tensors, an If branch's values in an If output's bytes and external
// inputs (and their views) are checksummed; only arena buffers are poisoned when dead (a dynamic
// tensor's memory is its own until the session grows it; a value in an If output shares its bytes
// with that output; an external input is the caller's).
bool guarded(const CompiledModel::Impl& m, size_t id) {
  using Home = CompiledModel::Impl::Home;
  const Home h = m.homes[id];
  return h == Home::Arena || h == Home::Dynamic || h == Home::External || m.in_if_output[id];
}

uint64_t checksum(const rt::TensorView& v) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  const uint64_t n = v.byte_size();
  for (uint64_t i = 0; i < n; ++i) h = (h ^ static_cast<uint8_t>(v.data[i])) * 1099511628211ull;
  return h;
}

}  // namespace

void Session::Impl::guard_before(const NodeExec& ne) {
  if (ne.node->graph == m.model.main.get() && &ne == &m.nodes[static_cast<size_t>(m.graphs.at(m.model.main.get()).nodes.front())])
    for (const Value* v : m.model.main->inputs) {  // the caller wrote these before run()
      const int32_t id = m.id(v);
      if (!guarded(m, static_cast<size_t>(id))) continue;
      checksums[static_cast<size_t>(id)] = checksum(view(id));
      written[static_cast<size_t>(id)] = 1;
    }
  auto check = [&](const Value* v) {
    if (!v) return;
    const auto id = static_cast<size_t>(m.id(v));
    if (!guarded(m, id) || !written[id]) return;
    if (checksum(views[id]) != checksums[id])
      throw Error(ErrorKind::Verification, m.model.path + ": memory guard: buffer '" + v->name + "' (made by " +
                                               (v->producer ? v->producer->describe() : std::string("the caller")) +
                                               ") changed before " + ne.node->describe() + " read it");
  };
  for (const Value* v : ne.node->inputs) check(v);
  for (const Value* v : ne.node->implicit_inputs) check(v);
}

void Session::Impl::guard_after(const NodeExec& ne) {
  const Graph& g = *ne.node->graph;
  for (const Value* v : ne.node->outputs) {
    if (!v) continue;
    const auto id = static_cast<size_t>(m.id(v));
    if (!guarded(m, id)) continue;
    checksums[id] = checksum(views[id]);
    written[id] = 1;
  }
  // Poison what dies here: values of this graph none of whose readers come later.
  const GraphExec& ge = m.graphs.at(&g);
  size_t step = 0;
  while (step < ge.nodes.size() && &m.nodes[static_cast<size_t>(ge.nodes[step])] != &ne) ++step;
  auto dies_here = [&](const Value* v) {
    if (!v || v->graph != &g || v->is_graph_output) return false;
    for (const Node* c : v->consumers) {
      size_t cs = 0;
      while (cs < ge.nodes.size() && m.nodes[static_cast<size_t>(ge.nodes[cs])].node != c) ++cs;
      if (cs > step) return false;
    }
    return true;
  };
  // A value made at or before this step that is read later (or returned).
  auto live_after = [&](const Value* v) {
    if (v->graph != &g) return true;
    // A Concat whose inputs are written into its bytes holds them before it runs.
    if (v->producer && v->producer->op_type != "Concat") {
      size_t ps = 0;
      while (ps < ge.nodes.size() && m.nodes[static_cast<size_t>(ge.nodes[ps])].node != v->producer) ++ps;
      if (ps > step) return false;  // not made yet: it will write these bytes on purpose
    }
    return !dies_here(v);
  };
  // Bytes shared by a storage group die with the last of its members.
  auto group_dies_here = [&](size_t id) {
    for (int32_t other : m.sharing[id])
      if (static_cast<size_t>(other) != id && live_after(m.values[static_cast<size_t>(other)])) return false;
    return true;
  };
  auto poison = [&](const Value* v) {
    const auto id = static_cast<size_t>(m.id(v));
    if (m.homes[id] != CompiledModel::Impl::Home::Arena || !dies_here(v) || !group_dies_here(id)) return;
    rt::TensorView& tv = views[id];
    if (tv.data < arena || tv.data >= arena + arena_bytes) return;  // a caller's zero-copy input
    std::memset(tv.data, static_cast<int>(kPoison), tv.capacity);
    written[id] = 0;
  };
  for (const Value* v : ne.node->inputs) if (v) poison(v);
  for (const Value* v : ne.node->implicit_inputs) poison(v);
  for (const Value* v : ne.node->outputs) if (v && v->consumers.empty()) poison(v);
}

}  // namespace memplan
