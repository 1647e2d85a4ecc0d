// If, Loop and Scan at run time. Subgraph inputs and outputs are bound by pointer: a branch or
// body output made by one of its own nodes is written straight into the parent's buffer, a loop
// slot (iteration k writes slot k%2 and reads slot (k-1)%2) or a slice of a scan output. Other
// outputs (constants, pass-through inputs) are copied once.
#include <cstring>

#include "memplan/error.h"
#include "runtime/session_impl.h"

namespace memplan {

namespace {

bool read_bool(const rt::TensorView& v) { return v.data && static_cast<uint8_t>(v.data[0]) != 0; }

int64_t read_int(const rt::TensorView& v) {
  if (v.dtype == DType::Int32) {
    int32_t x;
    std::memcpy(&x, v.data, 4);
    return x;
  }
  int64_t x;
  std::memcpy(&x, v.data, 8);
  return x;
}

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

}  // namespace

rt::TensorView Session::Impl::slot_view(uint64_t offset, const rt::TensorView& like) {
  rt::TensorView v = like;
  v.data = arena + offset;
  return v;
}

void Session::Impl::copy_into(rt::TensorView& dst, const rt::TensorView& src, const Node& node, const char* what) {
  const uint64_t bytes = src.byte_size();
  if (bytes > dst.capacity)
    fail(m.model.path + ": " + node.describe() + ": " + what + " needs " + std::to_string(bytes) +
         " bytes but its buffer holds " + std::to_string(dst.capacity) + "; raise its bound with --bound");
  if (bytes && dst.data != src.data) std::memmove(dst.data, src.data, bytes);
  dst.rank = src.rank;
  dst.dims = src.dims;
}

void Session::Impl::run_if(const NodeExec& ne) {
  const Node& n = *ne.node;
  static const std::string kThen = "then_branch", kElse = "else_branch";
  const Graph& g = *n.subgraph(read_bool(view(ne.inputs[0])) ? kThen : kElse);
  const GraphExec& ge = m.graphs.at(&g);
  for (size_t k = 0; k < g.outputs.size(); ++k)
    if (ne.outputs[k] >= 0 && ge.outputs_bound[k]) {
      rt::TensorView& inner = view(m.id(g.outputs[k]));
      inner.data = view(ne.outputs[k]).data;
      inner.capacity = view(ne.outputs[k]).capacity;
    }
  run_graph(g);
  for (size_t k = 0; k < g.outputs.size(); ++k) {
    if (ne.outputs[k] < 0) continue;
    const rt::TensorView& inner = view(m.id(g.outputs[k]));
    if (m.homes[static_cast<size_t>(ne.outputs[k])] == CompiledModel::Impl::Home::Dynamic)
      reserve_dynamic(ne.outputs[k], inner.byte_size(), false);
    copy_into(view(ne.outputs[k]), inner, n, "branch output");
  }
}

void Session::Impl::run_loop(const NodeExec& ne) {
  const Node& n = *ne.node;
  static const std::string kBody = "body";
  const Graph& body = *n.subgraph(kBody);
  const GraphExec& ge = m.graphs.at(&body);
  const size_t carried = n.inputs.size() - 2;
  const int64_t max_trips = ne.inputs[0] >= 0 ? read_int(view(ne.inputs[0])) : INT64_MAX;
  bool cond = ne.inputs[1] >= 0 ? read_bool(view(ne.inputs[1])) : true;

  // Slot 0 of the condition holds iteration 0's input condition (iteration 0 writes slot 0 after).
  const LoopSlots& cond_slots = ne.slots[1];
  arena[cond_slots.slot[1]] = std::byte{cond ? uint8_t{1} : uint8_t{0}};
  rt::TensorView& iter_in = view(m.id(body.inputs[0]));
  iter_in.data = arena + ne.slots[0].slot[0];
  iter_in.capacity = 8;

  // A scan output whose length only the loop decides is a dynamic tensor: it grows as iterations
  // append to it (the earlier slices are kept).
  auto grow_if_dynamic = [&](int32_t id, uint64_t bytes) {
    if (m.homes[static_cast<size_t>(id)] == CompiledModel::Impl::Home::Dynamic) reserve_dynamic(id, bytes, true);
  };
  for (size_t o = carried; o < n.outputs.size(); ++o)
    if (ne.outputs[o] >= 0) grow_if_dynamic(ne.outputs[o], 0);
  int64_t k = 0;
  for (; k < max_trips && cond; ++k) {
    const int cur = static_cast<int>(k % 2), prev = 1 - cur;
    std::memcpy(iter_in.data, &k, 8);
    rt::TensorView& cond_in = view(m.id(body.inputs[1]));
    cond_in.data = arena + cond_slots.slot[prev];
    cond_in.capacity = 1;
    for (size_t j = 0; j < carried; ++j) {
      rt::TensorView& in = view(m.id(body.inputs[j + 2]));
      const rt::TensorView& init = view(ne.inputs[j + 2]);
      in = k == 0 ? init : slot_view(ne.slots[j + 2].slot[prev], init);
      if (k > 0) in.capacity = ne.slots[j + 2].size;
    }
    // Bound outputs: the condition and carried values into this iteration's slots, scan outputs
    // into slice k.
    for (size_t o = 0; o < body.outputs.size(); ++o) {
      if (!ge.outputs_bound[o]) continue;
      rt::TensorView& out = view(m.id(body.outputs[o]));
      if (o <= carried) {
        out.data = arena + ne.slots[o + 1].slot[cur];
        out.capacity = ne.slots[o + 1].size;
      } else if (ne.outputs[o - 1] >= 0) {
        const uint64_t elem = m.capacities[static_cast<size_t>(m.id(body.outputs[o]))];
        grow_if_dynamic(ne.outputs[o - 1], (static_cast<uint64_t>(k) + 1) * elem);
        const rt::TensorView& whole = view(ne.outputs[o - 1]);
        if ((static_cast<uint64_t>(k) + 1) * elem > whole.capacity)
          fail(m.model.path + ": " + n.describe() + ": scan output '" + body.outputs[o]->name + "' exceeds its bound after " +
               std::to_string(k) + " iterations; raise it with --bound " + n.outputs[o - 1]->name + "=<dims>");
        out.data = whole.data + static_cast<uint64_t>(k) * elem;
        out.capacity = elem;
      }
    }
    run_graph(body);
    for (size_t o = 0; o < body.outputs.size(); ++o) {
      if (ge.outputs_bound[o]) continue;
      const rt::TensorView& src = view(m.id(body.outputs[o]));
      if (o <= carried) {
        rt::TensorView dst = slot_view(ne.slots[o + 1].slot[cur], src);
        dst.capacity = ne.slots[o + 1].size;
        copy_into(dst, src, n, "carried value");
      } else if (ne.outputs[o - 1] >= 0) {
        const uint64_t elem = src.byte_size();
        grow_if_dynamic(ne.outputs[o - 1], (static_cast<uint64_t>(k) + 1) * elem);
        const rt::TensorView& whole = view(ne.outputs[o - 1]);
        if ((static_cast<uint64_t>(k) + 1) * elem > whole.capacity)
          fail(m.model.path + ": " + n.describe() + ": scan output '" + n.outputs[o - 1]->name +
               "' exceeds its bound; raise it with --bound " + n.outputs[o - 1]->name + "=<dims>");
        rt::TensorView dst = slice0(whole, k, elem);
        copy_into(dst, src, n, "scan output");
      }
    }
    cond = read_bool(rt::TensorView{arena + cond_slots.slot[cur]});
  }

  // Final carried values: the last slot written, or the initial values after zero iterations.
  for (size_t j = 0; j < carried; ++j) {
    if (ne.outputs[j] < 0) continue;
    const rt::TensorView& init = view(ne.inputs[j + 2]);
    rt::TensorView src = k == 0 ? init : slot_view(ne.slots[j + 2].slot[(k - 1) % 2], init);
    if (k > 0) {
      const rt::TensorView& last = view(m.id(body.outputs[j + 1]));
      src.rank = last.rank;
      src.dims = last.dims;
    }
    copy_into(view(ne.outputs[j]), src, n, "final carried value");
  }
  for (size_t o = carried; o < n.outputs.size(); ++o) {
    if (ne.outputs[o] < 0) continue;
    rt::TensorView& whole = view(ne.outputs[o]);
    const Value* elem = body.outputs[o + 1];
    const rt::TensorView& last = view(m.id(elem));
    whole.rank = (elem->type.has_rank ? static_cast<int>(elem->type.dims.size()) : last.rank) + 1;
    whole.dims[0] = k;
    for (int d = 1; d < whole.rank; ++d) whole.dims[d] = k > 0 ? last.dims[d - 1] : std::max<int64_t>(elem->type.dims[d - 1].value, 0);
  }
}

// Scan from opset 9 scans axis 0 of each scan input. Opset 8 has a leading batch axis on every
// input and output (each batch item is scanned on its own, along axis 1) and sequence_lens first.
void Session::Impl::run_scan(const NodeExec& ne) {
  const Node& n = *ne.node;
  static const std::string kBody = "body";
  const Graph& body = *n.subgraph(kBody);
  const GraphExec& ge = m.graphs.at(&body);
  const bool batched = n.opset < 9;
  const size_t first = batched ? 1 : 0;
  const size_t scans = static_cast<size_t>(n.attr_int("num_scan_inputs", 0));
  const size_t states = n.inputs.size() - first - scans;
  // References, not copies: run() must not allocate.
  static const std::vector<int64_t> kNone;
  static const std::string kDirs = "directions", kInDirs = "scan_input_directions",
                           kOutDirs = "scan_output_directions", kInAxes = "scan_input_axes",
                           kOutAxes = "scan_output_axes";
  auto ints = [&n](const std::string& name) -> const std::vector<int64_t>& {
    const Attribute* a = n.attr(name);
    return a ? a->ints : kNone;
  };
  const std::vector<int64_t>& in_dirs = ints(batched ? kDirs : kInDirs);
  const std::vector<int64_t>& out_dirs = batched ? kNone : ints(kOutDirs);
  for (int64_t a : ints(kInAxes))
    if (a != 0) fail_unsupported(m.model.path + ": " + n.describe() + ": scan_input_axes other than 0 cannot run yet");
  for (int64_t a : ints(kOutAxes))
    if (a != 0) fail_unsupported(m.model.path + ": " + n.describe() + ": scan_output_axes other than 0 cannot run yet");
  auto in = [&](size_t k) -> rt::TensorView& { return view(ne.inputs[first + k]); };
  const rt::TensorView& lead = in(states);
  const int64_t batch = batched ? lead.dims[0] : 1;
  const int64_t steps = lead.dims[batched ? 1 : 0];
  // Batch item b of a batched tensor (the tensor itself when not batched).
  auto item = [&](const rt::TensorView& v, int64_t b) {
    return batched ? slice0(v, b, v.byte_size() / static_cast<uint64_t>(std::max<int64_t>(batch, 1))) : v;
  };

  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t t = 0; t < steps; ++t) {
      const int cur = static_cast<int>(t % 2), prev = 1 - cur;
      for (size_t j = 0; j < states; ++j) {
        const rt::TensorView init = item(in(j), b);
        view(m.id(body.inputs[j])) = t == 0 ? init : slot_view(ne.slots[j].slot[prev], init);
      }
      for (size_t i = 0; i < scans; ++i) {
        const rt::TensorView whole = item(in(states + i), b);
        const bool reverse = i < in_dirs.size() && in_dirs[i] == 1;
        const uint64_t elem = whole.byte_size() / static_cast<uint64_t>(std::max<int64_t>(whole.dims[0], 1));
        view(m.id(body.inputs[states + i])) = slice0(whole, reverse ? steps - 1 - t : t, elem);
      }
      for (size_t o = 0; o < body.outputs.size(); ++o) {
        if (!ge.outputs_bound[o]) continue;
        rt::TensorView& out = view(m.id(body.outputs[o]));
        if (o < states) {
          out.data = arena + ne.slots[o].slot[cur];
          out.capacity = ne.slots[o].size;
        } else if (ne.outputs[o] >= 0) {
          const bool reverse = o - states < out_dirs.size() && out_dirs[o - states] == 1;
          const uint64_t elem = m.capacities[static_cast<size_t>(m.id(body.outputs[o]))];
          out.data = item(view(ne.outputs[o]), b).data + static_cast<uint64_t>(reverse ? steps - 1 - t : t) * elem;
          out.capacity = elem;
        }
      }
      run_graph(body);
      for (size_t o = 0; o < body.outputs.size(); ++o) {
        if (ge.outputs_bound[o]) continue;
        const rt::TensorView& src = view(m.id(body.outputs[o]));
        if (o < states) {
          rt::TensorView dst = slot_view(ne.slots[o].slot[cur], src);
          dst.capacity = ne.slots[o].size;
          copy_into(dst, src, n, "state value");
        } else if (ne.outputs[o] >= 0) {
          const bool reverse = o - states < out_dirs.size() && out_dirs[o - states] == 1;
          rt::TensorView dst = slice0(item(view(ne.outputs[o]), b), reverse ? steps - 1 - t : t, src.byte_size());
          copy_into(dst, src, n, "scan output");
        }
      }
    }
    for (size_t j = 0; j < states; ++j) {
      if (ne.outputs[j] < 0) continue;
      const rt::TensorView init = item(in(j), b);
      const rt::TensorView src = steps == 0 ? init : slot_view(ne.slots[j].slot[(steps - 1) % 2], init);
      if (!batched) {
        copy_into(view(ne.outputs[j]), src, n, "final state");
      } else {
        rt::TensorView dst = item(view(ne.outputs[j]), b);
        copy_into(dst, src, n, "final state");
      }
    }
  }
}

}  // namespace memplan
