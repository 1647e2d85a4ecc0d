// If, Loop and Scan at run time. Subgraph inputs and outputs are bound by pointer: a branch or
// body output made by one of its own nodes is written straight into the parent's buffer, a loop
// slot (iteration k writes slot k%2 and reads slot (k-1)%2; one slot, or the Loop's output, for a
// value updated in place) or a slice of a scan output. Other outputs (constants, pass-through
// inputs) are copied once. Which node port meets which subgraph port is ControlFlowPorts' answer
// (lib/ir/control_flow_ports.h). Nothing here allocates, but for dynamic tensors (a growing carried
// value, a scan output of a length only the run decides) until their buffers are large enough.
#include <algorithm>
#include <cstring>
#include <utility>

#include "ir/unreachable_branch.h"
#include "memplan/error.h"
#include "runtime/session_impl.h"

namespace memplan {

namespace {

bool read_bool(const rt::TensorView& v) { return v.data && static_cast<uint8_t>(v.data[0]) != 0; }

// A view of element `index` along axis 0 of `whole`.
rt::TensorView slice0(const rt::TensorView& whole, int64_t index, uint64_t elem_bytes) {
  rt::TensorView s;
  s.data = whole.data + static_cast<uint64_t>(index) * elem_bytes;
  s.dtype = whole.dtype;
  s.rank = whole.rank - 1;
  for (int d = 0; d < s.rank; ++d) s.dims[d] = whole.dims[d + 1];
  s.capacity = elem_bytes;
  return s;
}

using Home = CompiledModel::Impl::Home;

// What Loop and Scan share: the body, its ports and slots, and the session's views.
class BodyRun {
 public:
  BodyRun(Session::Impl& s, const NodeExec& ne)
      : s_(s), ne_(ne), n_(*ne.node), body_(*n_.subgraph(kBody)), ge_(s.m.graphs.at(&body_)), ports_(*ne.ports) {}

 protected:
  rt::TensorView& inner(const Value* v) { return s_.view(s_.m.id(v)); }
  rt::TensorView& node_input(int32_t port) { return s_.view(ne_.inputs[static_cast<size_t>(port)]); }
  // -1 when the node omits it (or declares fewer outputs than its body returns).
  int32_t node_output(int32_t port) const {
    return port >= 0 && static_cast<size_t>(port) < ne_.outputs.size() ? ne_.outputs[static_cast<size_t>(port)] : -1;
  }
  const LoopSlots& slots(int32_t slot) const { return ne_.slots[static_cast<size_t>(slot)]; }
  // Slot `which` (0 or 1) of `slot`: after the body frame, or the Loop's own output (loop state
  // in place, where both are the same bytes).
  std::byte* slot_data(int32_t slot, int which) {
    const LoopSlots& ls = slots(slot);
    return ls.in_output >= 0 ? s_.view(node_output(ls.in_output)).data : s_.arena + ls.slot[which];
  }
  // Slot `which` of `slot`, shaped like `like`.
  rt::TensorView slot_view(int32_t slot, int which, const rt::TensorView& like) {
    rt::TensorView v = like;
    v.data = slot_data(slot, which);
    v.capacity = slots(slot).size;
    return v;
  }
  // Points a bound body output at slot `which` of `slot`.
  void bind_to_slot(rt::TensorView& out, int32_t slot, int which) {
    out.data = slot_data(slot, which);
    out.capacity = slots(slot).size;
  }
  bool bound(size_t body_output) const { return ge_.outputs_bound[body_output] != 0; }
  // A Loop's carried value whose shape the run decides (it grows): the session's memory, not a
  // slot of the plan. Its body input is dynamic and holds what the last iteration wrote.
  int32_t carried_input(int32_t slot) const { return s_.m.id(body_.inputs[ports_.body_input_of_slot(slot)]); }
  bool dynamic_slot(int32_t slot) const {
    return slot >= 0 && s_.m.homes[static_cast<size_t>(carried_input(slot))] == Home::Dynamic;
  }
  // A carried sequence or optional: the session's container, handed on like a dynamic value.
  bool container_slot(int32_t slot) const {
    return slot >= 0 && s_.m.homes[static_cast<size_t>(carried_input(slot))] == Home::Container;
  }
  void hand_over_container(size_t o, int32_t slot) {
    const Value* out = body_.outputs[o];
    const int32_t in_id = carried_input(slot), out_id = s_.m.id(out);
    if (out_id == in_id) return;
    if (out->graph == &body_ && out->producer) s_.container(in_id).swap(s_.container(out_id));
    else s_.container(in_id).assign(s_.container(out_id));
  }

  // Iteration k's value of a growing carried value becomes what iteration k + 1 reads. The
  // buffer its producer wrote is handed over, swapped with the one the body input held (which the
  // producer then reuses): no copy, and no allocation once both are large enough. A value the
  // body did not make (its input passed through, a constant, an outer value) is copied.
  void hand_over(size_t o, int32_t slot) {
    const Value* out = body_.outputs[o];
    const int32_t in_id = carried_input(slot), out_id = s_.m.id(out);
    if (out_id == in_id) return;  // returned unchanged: it already holds it
    rt::TensorView& in = s_.view(in_id);
    const rt::TensorView src = s_.view(out_id);
    if (out->graph == &body_ && out->producer && s_.m.homes[static_cast<size_t>(out_id)] == Home::Dynamic) {
      auto& held = s_.dynamic_buffers[static_cast<size_t>(in_id)];
      auto& made = s_.dynamic_buffers[static_cast<size_t>(out_id)];
      std::swap(held.data, made.data);
      std::swap(held.capacity, made.capacity);
      held.peak = std::max(held.peak, src.byte_size());
      in = src;
      in.capacity = held.capacity;
      return;
    }
    if (src.data != in.data) s_.reserve_dynamic(in_id, src.byte_size(), false);
    s_.copy_into(in, src, n_, "carried value");
  }

  // Points the bound body outputs of iteration k at their memory: carried values at this
  // iteration's slot, scan elements where `scan_slice(port, element bytes)` says.
  template <typename ScanSlice>
  void bind_outputs(int64_t k, ScanSlice&& scan_slice) {
    const int cur = static_cast<int>(k % 2);
    for (size_t o = 0; o < body_.outputs.size(); ++o) {
      if (!bound(o)) continue;
      const Port p = ports_.body_output(o);
      rt::TensorView& out = inner(body_.outputs[o]);
      if (p.slot >= 0) {
        bind_to_slot(out, p.slot, cur);
      } else {
        const rt::TensorView slice = scan_slice(p, s_.m.capacities[static_cast<size_t>(s_.m.id(body_.outputs[o]))]);
        out.data = slice.data;
        out.capacity = slice.capacity;
      }
    }
  }

  // Copies the outputs the body did not write in place (constants, pass-through inputs) to the
  // same places; a scan element whose node output is omitted (no data) is dropped.
  template <typename ScanSlice>
  void copy_outputs(int64_t k, ScanSlice&& scan_slice) {
    const int cur = static_cast<int>(k % 2);
    for (size_t o = 0; o < body_.outputs.size(); ++o) {
      if (bound(o)) continue;
      const Port p = ports_.body_output(o);
      if (container_slot(p.slot)) {
        hand_over_container(o, p.slot);
        continue;
      }
      if (dynamic_slot(p.slot)) {
        hand_over(o, p.slot);
        continue;
      }
      const rt::TensorView& src = inner(body_.outputs[o]);
      rt::TensorView dst = p.slot >= 0 ? slot_view(p.slot, cur, src) : scan_slice(p, src.byte_size());
      if (dst.data) s_.copy_into(dst, src, n_, p.slot >= 0 ? "carried value" : "scan output");
    }
  }

  static inline const std::string kBody = "body";
  Session::Impl& s_;
  const NodeExec& ne_;
  const Node& n_;
  const Graph& body_;
  const GraphExec& ge_;
  const ControlFlowPorts& ports_;
};

class LoopRun : BodyRun {
 public:
  using BodyRun::BodyRun;

  void run() {
    const int64_t max_trips = ne_.inputs[0] >= 0 ? rt::scalar_int(node_input(0)) : INT64_MAX;
    bool cond = ne_.inputs[1] >= 0 ? read_bool(node_input(1)) : true;
    start(cond);
    int64_t k = 0;
    for (; k < max_trips && cond; ++k) {
      const int cur = static_cast<int>(k % 2);
      bind_inputs(k);
      bind_outputs(k);
      s_.run_graph(body_);
      copy_outputs(k);
      cond = read_bool(rt::TensorView{slot_data(kConditionSlot, cur)});
    }
    finish(k);
  }

 private:
  static constexpr int32_t kCounterSlot = 0, kConditionSlot = 1;

  // Iteration 0 reads its condition from slot 1 (it writes slot 0); the counter has one slot.
  void start(bool cond) {
    *slot_data(kConditionSlot, 1) = std::byte{cond ? uint8_t{1} : uint8_t{0}};
    rt::TensorView& counter = inner(body_.inputs[0]);
    counter.data = slot_data(kCounterSlot, 0);
    counter.capacity = 8;
    // A scan output whose length only the loop decides is dynamic: it grows as iterations append.
    for (size_t i = 0; i < ports_.scan_outputs(body_.outputs.size()); ++i) grow(node_output_of_scan(i), 0);
  }

  int32_t node_output_of_scan(size_t i) const { return node_output(static_cast<int32_t>(ports_.node_output_of_scan(i))); }

  void grow(int32_t id, uint64_t bytes) {
    if (id >= 0 && s_.m.homes[static_cast<size_t>(id)] == Home::Dynamic) s_.reserve_dynamic(id, bytes, true);
  }

  // Iteration k reads the initial values (k = 0) or what iteration k - 1 wrote.
  void bind_inputs(int64_t k) {
    const int prev = 1 - static_cast<int>(k % 2);
    std::memcpy(inner(body_.inputs[0]).data, &k, 8);
    for (size_t b = 1; b < body_.inputs.size(); ++b) {
      const Port p = ports_.body_input(b);
      rt::TensorView& in = inner(body_.inputs[b]);
      if (p.kind == Port::Kind::Condition) {
        in.data = slot_data(p.slot, prev);
        in.capacity = 1;
        continue;
      }
      const rt::TensorView& init = node_input(p.node_port);
      if (container_slot(p.slot)) {
        if (k == 0) s_.container(s_.m.id(body_.inputs[b])).assign(s_.container(ne_.inputs[static_cast<size_t>(p.node_port)]));
        continue;
      }
      if (dynamic_slot(p.slot)) {
        if (k == 0) in = init;  // later iterations read what hand_over() left there
        continue;
      }
      if (k == 0) {
        in = init;
        continue;
      }
      // Shaped as the last iteration wrote it: a bounded carried value may grow within its slot.
      const rt::TensorView& last = inner(body_.outputs[static_cast<size_t>(ports_.body_output_of_slot(p.slot))]);
      in = slot_view(p.slot, prev, init);
      in.rank = last.rank;
      in.dims = last.dims;
    }
  }

  // Slice k of scan output i, for an element of `elem` bytes (growing a dynamic one); no data
  // when the node omits the output.
  rt::TensorView scan_slice(size_t i, int64_t k, uint64_t elem) {
    const int32_t id = node_output_of_scan(i);
    if (id < 0) return {};
    const uint64_t need = (static_cast<uint64_t>(k) + 1) * elem;
    grow(id, need);
    const rt::TensorView& whole = s_.view(id);
    if (need > whole.capacity)
      fail(s_.m.model.path + ": " + n_.describe() + ": scan output '" + n_.outputs[ports_.node_output_of_scan(i)]->name +
           "' exceeds its bound after " + std::to_string(k + 1) + " iterations; raise the bound of '" +
           n_.outputs[ports_.node_output_of_scan(i)]->name + "'");
    return slice0(whole, k, elem);
  }

  void bind_outputs(int64_t k) {
    BodyRun::bind_outputs(k, [&](const Port& p, uint64_t elem) { return scan_slice(p.index, k, elem); });
  }
  void copy_outputs(int64_t k) {
    BodyRun::copy_outputs(k, [&](const Port& p, uint64_t elem) { return scan_slice(p.index, k, elem); });
  }

  // Final carried values: the last slot written, or the initial values after zero iterations;
  // scan outputs get their length.
  void finish(int64_t k) {
    for (size_t j = 0; j < ports_.carried(); ++j) {
      if (node_output(static_cast<int32_t>(j)) < 0) continue;
      const int32_t slot = ports_.slot_of_carried(j);
      const rt::TensorView& init = node_input(static_cast<int32_t>(ports_.first_carried_input() + j));
      const int32_t out_id = node_output(static_cast<int32_t>(j));
      if (container_slot(slot)) {
        const int32_t in_id = ne_.inputs[ports_.first_carried_input() + j];
        s_.container(out_id).assign(s_.container(k == 0 ? in_id : carried_input(slot)));
        continue;
      }
      if (dynamic_slot(slot)) {
        const rt::TensorView src = k == 0 ? init : s_.view(carried_input(slot));
        s_.write_tensor(out_id, src, n_, "final carried value");
        continue;
      }
      rt::TensorView src = k == 0 ? init : slot_view(slot, static_cast<int>((k - 1) % 2), init);
      if (k > 0) {
        const rt::TensorView& last = inner(body_.outputs[static_cast<size_t>(ports_.body_output_of_slot(slot))]);
        src.rank = last.rank;
        src.dims = last.dims;
      }
      s_.write_tensor(out_id, src, n_, "final carried value");
    }
    for (size_t i = 0; i < ports_.scan_outputs(body_.outputs.size()); ++i) {
      const int32_t id = node_output_of_scan(i);
      if (id < 0) continue;
      rt::TensorView& whole = s_.view(id);
      const Value* elem = body_.outputs[ports_.body_output_of_node_output(ports_.node_output_of_scan(i))];
      const rt::TensorView& last = inner(elem);
      whole.rank = (elem->type.has_rank ? static_cast<int>(elem->type.dims.size()) : last.rank) + 1;
      whole.dims[0] = k;
      for (int d = 1; d < whole.rank; ++d)
        whole.dims[d] = k > 0 ? last.dims[d - 1] : std::max<int64_t>(elem->type.dims[d - 1].value, 0);
    }
  }
};

// Scan from opset 9 scans axis 0 of each scan input. Opset 8 has a leading batch axis on every
// input and output (each batch item is scanned on its own, along axis 1) and sequence_lens first.
class ScanRun : BodyRun {
 public:
  ScanRun(Session::Impl& s, const NodeExec& ne) : BodyRun(s, ne), batched_(n_.opset < 9) {
    in_dirs_ = &ints(batched_ ? kDirs : kInDirs);
    out_dirs_ = batched_ ? &kNone : &ints(kOutDirs);
    // Scan axes other than 0 are refused at kernel selection.
    const rt::TensorView& lead = scan_input(0);
    batch_ = batched_ ? lead.dims[0] : 1;
    steps_ = lead.dims[batched_ ? 1 : 0];
  }

  void run() {
    for (int64_t b = 0; b < batch_; ++b) {
      for (int64_t t = 0; t < steps_; ++t) {
        bind_inputs(b, t);
        bind_outputs(b, t);
        s_.run_graph(body_);
        copy_outputs(b, t);
      }
      finish(b);
    }
  }

 private:
  // References, not copies: run() must not allocate.
  static inline const std::vector<int64_t> kNone;
  static inline const std::string kDirs = "directions", kInDirs = "scan_input_directions",
                                  kOutDirs = "scan_output_directions";
  const std::vector<int64_t>& ints(const std::string& name) const {
    const Attribute* a = n_.attr(name);
    return a ? a->ints : kNone;
  }

  rt::TensorView& state_input(size_t j) { return node_input(static_cast<int32_t>(ports_.first_carried_input() + j)); }
  rt::TensorView& scan_input(size_t i) {
    return node_input(static_cast<int32_t>(ports_.first_carried_input() + ports_.carried() + i));
  }
  // Batch item b of a batched tensor (the tensor itself when not batched).
  rt::TensorView item(const rt::TensorView& v, int64_t b) const {
    return batched_ ? slice0(v, b, v.byte_size() / static_cast<uint64_t>(std::max<int64_t>(batch_, 1))) : v;
  }
  // The position step t reads or writes along a scan axis, for the direction at `i` of `dirs`.
  int64_t position(const std::vector<int64_t>& dirs, size_t i, int64_t t) const {
    return i < dirs.size() && dirs[i] == 1 ? steps_ - 1 - t : t;
  }

  void bind_inputs(int64_t b, int64_t t) {
    const int prev = 1 - static_cast<int>(t % 2);
    for (size_t j = 0; j < ports_.carried(); ++j) {
      const rt::TensorView init = item(state_input(j), b);
      inner(body_.inputs[j]) = t == 0 ? init : slot_view(ports_.slot_of_carried(j), prev, init);
    }
    for (size_t i = 0; i < ports_.scan_inputs(); ++i) {
      const rt::TensorView whole = item(scan_input(i), b);
      const uint64_t elem = whole.byte_size() / static_cast<uint64_t>(std::max<int64_t>(whole.dims[0], 1));
      inner(body_.inputs[ports_.carried() + i]) = slice0(whole, position(*in_dirs_, i, t), elem);
    }
  }

  // Element t of scan output `p` of batch item b (from the end when its direction is reversed).
  rt::TensorView scan_slice(const Port& p, int64_t b, int64_t t, uint64_t elem) {
    const int32_t id = node_output(p.node_port);
    if (id < 0) return {};
    return slice0(item(s_.view(id), b), position(*out_dirs_, p.index, t), elem);
  }
  void bind_outputs(int64_t b, int64_t t) {
    BodyRun::bind_outputs(t, [&](const Port& p, uint64_t elem) { return scan_slice(p, b, t, elem); });
  }
  void copy_outputs(int64_t b, int64_t t) {
    BodyRun::copy_outputs(t, [&](const Port& p, uint64_t elem) { return scan_slice(p, b, t, elem); });
  }

  // The final states of batch item b: the last slot written, or the initial values after no step.
  void finish(int64_t b) {
    for (size_t j = 0; j < ports_.carried(); ++j) {
      const int32_t id = node_output(static_cast<int32_t>(j));
      if (id < 0) continue;
      const rt::TensorView init = item(state_input(j), b);
      const rt::TensorView src = steps_ == 0 ? init : slot_view(ports_.slot_of_carried(j), static_cast<int>((steps_ - 1) % 2), init);
      if (!batched_) {
        s_.copy_into(s_.view(id), src, n_, "final state");
      } else {
        rt::TensorView dst = item(s_.view(id), b);
        s_.copy_into(dst, src, n_, "final state");
      }
    }
  }

  const bool batched_;
  const std::vector<int64_t>* in_dirs_ = nullptr;
  const std::vector<int64_t>* out_dirs_ = nullptr;
  int64_t batch_ = 1, steps_ = 0;
};

}  // namespace

void Session::Impl::copy_into(rt::TensorView& dst, const rt::TensorView& src, const Node& node, const char* what) {
  const uint64_t bytes = src.byte_size();
  if (bytes > dst.capacity)
    fail(m.model.path + ": " + node.describe() + ": " + what + " needs " + std::to_string(bytes) +
         " bytes but its buffer holds " + std::to_string(dst.capacity) + "; raise its bound");
  if (bytes && dst.data != src.data) std::memmove(dst.data, src.data, bytes);
  dst.rank = src.rank;
  dst.dims = src.dims;
}

void Session::Impl::run_if(const NodeExec& ne) {
  const Node& n = *ne.node;
  static const std::string kThen = "then_branch", kElse = "else_branch";
  const bool take_then = read_bool(view(ne.inputs[0]));
  if (const std::string* why = unreachable_branch_reason(n, take_then))
    fail(m.model.path + ": " + n.describe() + ": its condition takes the " + (take_then ? kThen : kElse) +
         ", which cannot run on these input shapes: " + *why);
  const Graph& g = *n.subgraph(take_then ? kThen : kElse);
  const GraphExec& ge = m.graphs.at(&g);
  for (size_t k = 0; k < g.outputs.size(); ++k)
    if (ge.outputs_bound[k]) {  // bound only where the If has the output (lifetimes.h)
      rt::TensorView& inner = view(m.id(g.outputs[k]));
      inner.data = view(ne.outputs[k]).data;
      inner.capacity = view(ne.outputs[k]).capacity;
    }
  for (const GraphExec::InIfOutput& in : ge.in_if_outputs) {  // the verifier checked they fit
    const rt::TensorView& out = view(ne.outputs[in.output]);
    rt::TensorView& v = view(in.value);
    v.data = out.data + in.offset;
    v.capacity = out.capacity - in.offset;
  }
  run_graph(g);
  for (size_t k = 0; k < g.outputs.size(); ++k) {
    if (ne.outputs[k] < 0) continue;
    if (m.homes[static_cast<size_t>(ne.outputs[k])] == Home::Container) {
      container(ne.outputs[k]).assign(container(m.id(g.outputs[k])));
      continue;
    }
    write_tensor(ne.outputs[k], view(m.id(g.outputs[k])), n, "branch output");
  }
}

void Session::Impl::run_loop(const NodeExec& ne) { LoopRun(*this, ne).run(); }
void Session::Impl::run_scan(const NodeExec& ne) { ScanRun(*this, ne).run(); }

}  // namespace memplan
