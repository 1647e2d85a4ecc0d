#include "shapes/control_flow_shapes.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>

#include "ir/control_flow_ports.h"
#include "ir/graph_clone.h"
#include "ir/unreachable_branch.h"
#include "memplan/error.h"
#include "util/checked.h"

namespace memplan {
namespace {

std::string where(const Node& n, const std::string& file) { return file + ": " + n.graph->path() + ": " + n.describe(); }

// A subgraph input takes the parent's type where the model left it untyped or unshaped.
void type_input(Value* inner, const TensorType& outer) {
  if (outer.is_container()) inner->type.container = outer.container;
  if (inner->type.dtype == DType::Undefined) inner->type.dtype = outer.dtype;
  if (outer.has_rank) {
    inner->type.has_rank = true;
    inner->type.dims = outer.dims;
  }
}

TensorType scalar(DType t) {
  TensorType s;
  s.dtype = t;
  s.has_rank = true;
  return s;
}

// Bytes of one value as a subgraph output: its capacity if it has one (nested varying shapes).
uint64_t bytes_of(const Value* v, const std::string& what) {
  if (v->constant) return v->constant->byte_size();
  if (v->capacity_known) return v->capacity_bytes;
  if (!v->type.is_static()) return UINT64_MAX;
  return checked_mul(checked_element_count(v->type.static_dims(), what), dtype_size(v->type.dtype), what);
}

// Infers a branch; the error that says it cannot run on these shapes, if one does
// (ir/unreachable_branch.h). Any other error fails the compile.
std::optional<Error> infer_branch(const IfBranch& branch, const std::function<void(Graph&)>& infer) {
  try {
    infer(*branch.graph());
  } catch (const Error& e) {
    if (!branch_cannot_run(branch, e)) throw;
    return e;
  }
  return std::nullopt;
}

void infer_if(Node& n, const std::string& file, const std::function<void(Graph&)>& infer) {
  Graph* then_g = n.subgraph("then_branch");
  Graph* else_g = n.subgraph("else_branch");
  if (!then_g || !else_g) fail(where(n, file) + ": If needs then_branch and else_branch");
  if (n.inputs.size() != 1 || !n.inputs[0])
    fail(where(n, file) + ": If takes one input, its condition; it has " + std::to_string(n.inputs.size()));
  if (n.inputs[0]->type.is_container())
    fail(where(n, file) + ": its condition '" + n.inputs[0]->name + "' is " + a_container(n.inputs[0]->type.container));
  // The condition is known only at run time (an If whose condition folds is inlined before this):
  // a branch that cannot run on these shapes is one its caller never takes with them. Both failing
  // is the model's error.
  const std::optional<Error> then_error = infer_branch({&n, true}, infer);
  const std::optional<Error> else_error = infer_branch({&n, false}, infer);
  if (then_error && else_error) throw *then_error;
  if (then_g->outputs.size() != n.outputs.size() || else_g->outputs.size() != n.outputs.size())
    fail(where(n, file) + ": branches return a different number of values than the If has outputs");
  if (then_error) drop_branch({&n, true}, file, *then_error);
  if (else_error) drop_branch({&n, false}, file, *else_error);
  // A dropped branch (now, or when this If was inferred before) takes the other's types.
  const Graph& live_then = unreachable_branch_reason(n, true) ? *else_g : *then_g;
  const Graph& live_else = unreachable_branch_reason(n, false) ? *then_g : *else_g;
  for (size_t k = 0; k < n.outputs.size(); ++k) {
    Value* out = n.outputs[k];
    if (!out) continue;
    const Value* a = live_then.outputs[k];
    const Value* b = live_else.outputs[k];
    if (a->type.dtype != b->type.dtype)
      fail(where(n, file) + ": output '" + out->name + "' is " + dtype_name(a->type.dtype) + " in one branch and " +
           dtype_name(b->type.dtype) + " in the other");
    if (a->type.container != b->type.container)
      fail(where(n, file) + ": output '" + out->name + "' is " + a_container(a->type.container) +
           " in one branch and " + a_container(b->type.container) + " in the other");
    out->type.dtype = a->type.dtype;
    out->type.container = a->type.container;
    const bool same = a->type.is_static() && b->type.is_static() && a->type.static_dims() == b->type.static_dims() &&
                      !a->shape_varies && !b->shape_varies;
    if (same) {
      out->type.has_rank = true;
      out->type.dims = a->type.dims;
      continue;
    }
    // Different shapes per branch: the buffer holds the larger; the shape is run-time metadata.
    const std::string what = where(n, file) + " output '" + out->name + "'";
    uint64_t cap = std::max(bytes_of(a, what), bytes_of(b, what));
    out->shape_varies = true;
    if (cap != UINT64_MAX) {
      out->capacity_bytes = cap;
      out->capacity_known = true;
    }
    if (a->type.has_rank && b->type.has_rank && a->type.dims.size() == b->type.dims.size()) {
      out->type.has_rank = true;
      out->type.dims = a->type.dims;
      for (size_t d = 0; d < out->type.dims.size(); ++d)
        if (a->type.dims[d].value != b->type.dims[d].value) out->type.dims[d] = Dim{};
    } else {
      out->type.has_rank = false;
      out->type.dims.clear();
    }
  }
}

// The trip-count bound of a Loop: M when it is a known constant.
std::optional<int64_t> constant_trip_count(const Node& n) {
  const Value* m = n.inputs.empty() ? nullptr : n.inputs[0];
  if (!m || !m->constant) return std::nullopt;
  return m->constant->int_at(0);
}

// Marks `out` as a stack of `count` (or at most `count`) copies of the per-iteration `elem`.
void type_stacked(Value* out, const Value* elem, std::optional<int64_t> count, bool exact, size_t axis,
                  const std::string& what) {
  if (elem->type.is_container())
    fail_unsupported(what + ": the body returns " + a_container(elem->type.container) +
                     " there, and only tensors stack into a scan output");
  out->type.dtype = elem->type.dtype;
  if (!elem->type.has_rank) return;
  out->type.has_rank = true;
  out->type.dims = elem->type.dims;
  axis = std::min(axis, out->type.dims.size());
  out->type.dims.insert(out->type.dims.begin() + static_cast<std::ptrdiff_t>(axis),
                        exact && count ? Dim{*count, {}} : Dim{});
  if (!exact && count && *count >= 0) {
    const uint64_t per = bytes_of(elem, what);
    if (per != UINT64_MAX) {
      out->capacity_bytes = checked_mul(per, static_cast<uint64_t>(*count),
                                        what + " (the loop's trip count bound times the scan output size)");
      out->capacity_known = true;
      out->shape_varies = true;
    }
  }
}

// How often a Loop body is inferred again with wider carried types before its carried shapes are
// declared unsettled: each round makes at least one dim unknown or one type unranked, so a body
// settles within its carried values' total rank plus one.
constexpr int kMaxWidenings = 16;

bool same_dim(const Dim& a, const Dim& b) { return a.value == b.value && (a.known() || a.symbol == b.symbol); }

bool same_shape(const TensorType& a, const TensorType& b) {
  if (a.has_rank != b.has_rank || a.dims.size() != b.dims.size()) return false;
  for (size_t d = 0; d < a.dims.size(); ++d)
    if (!same_dim(a.dims[d], b.dims[d])) return false;
  return true;
}

// The narrowest type covering a value read as `a` and written as `b`: dims that differ become
// unknown; ranks that differ, unranked. The element type is a's (or b's where a has none).
TensorType covering(const TensorType& a, const TensorType& b) {
  TensorType out = a;
  if (out.dtype == DType::Undefined) out.dtype = b.dtype;
  if (!a.has_rank || !b.has_rank || a.dims.size() != b.dims.size()) {
    out.has_rank = false;
    out.dims.clear();
    return out;
  }
  for (size_t d = 0; d < out.dims.size(); ++d)
    if (!same_dim(a.dims[d], b.dims[d])) out.dims[d] = Dim{};
  return out;
}

// Puts `fresh` where `old` is among n's subgraphs (and its graph attribute); returns it.
Graph* replace_subgraph(Node& n, const Graph& old, std::unique_ptr<Graph> fresh) {
  const Graph* was = &old;  // compared only: the old graph is gone once replaced
  Graph* raw = fresh.get();
  for (Attribute& a : n.attributes)
    for (Graph*& g : a.graphs)
      if (g == was) g = raw;
  for (auto& sub : n.subgraphs)
    if (sub.get() == was) sub = std::move(fresh);
  return raw;
}

std::string shape_text(const std::vector<int64_t>& dims) {
  std::string out = "[";
  for (size_t d = 0; d < dims.size(); ++d) out += (d ? ", " : "") + std::to_string(dims[d]);
  return out + "]";
}

// A carried value that grows by the same amount every iteration (a token history, a column a
// step) under a trip count known at compile time is at most its initial size plus that many
// steps: its slots are planned in the arena at that bound, as a key/value cache is preallocated
// for the longest sequence, instead of leaving it to the session. The step is what iteration 0
// added; it is taken as every iteration's only when a copy of the body, given the value one step
// longer, adds it again. (The run checks every write against the slot all the same.)
void bound_growth_by_trip_count(const Node& n, Graph& body, const Graph& pristine,
                                const std::vector<std::optional<TensorType>>& widened,
                                const std::vector<std::optional<std::vector<int64_t>>>& first_step,
                                const std::function<void(Graph&)>& type_inputs,
                                const std::function<void(Graph&)>& infer, const std::string& file) {
  const auto trips = constant_trip_count(n);
  if (!trips || *trips < 0) return;
  const ControlFlowPorts ports(n);
  for (size_t j = 0; j < ports.carried(); ++j) {
    const int32_t slot = ports.slot_of_carried(j);
    const size_t k = ports.body_input_of_slot(slot);
    const Value* init = n.inputs[ports.first_carried_input() + j];
    if (!widened[k] || !first_step[k] || !init || !init->type.is_static()) continue;
    const std::vector<int64_t> start = init->type.static_dims();
    const std::vector<int64_t>& first = *first_step[k];
    if (first.size() != start.size()) continue;
    std::vector<int64_t> one_step = start, two_steps = start, bound = start;
    for (size_t d = 0; d < start.size(); ++d) {
      const int64_t grow = first[d] - start[d];
      one_step[d] = first[d];
      two_steps[d] = first[d] + grow;
      if (grow > 0 && grow > (INT64_MAX - start[d]) / std::max<int64_t>(*trips, 1)) return;  // no bound worth planning
      bound[d] = start[d] + std::max<int64_t>(grow, 0) * *trips;
    }
    // The second step, on a copy whose value is one step longer.
    const std::unique_ptr<Graph> probe = clone_graph(pristine);
    type_inputs(*probe);
    probe->inputs[k]->type.has_rank = true;
    probe->inputs[k]->type.dims.clear();
    for (int64_t d : one_step) probe->inputs[k]->type.dims.push_back(Dim{d, {}});
    try {
      infer(*probe);
    } catch (const Error&) {
      continue;  // the copy cannot tell: the value stays the session's
    }
    const Value* again = probe->outputs[static_cast<size_t>(ports.body_output_of_slot(slot))];
    Value* in = body.inputs[k];
    if (!again->type.is_static() || again->type.static_dims() != two_steps) {
      spdlog::debug("{}: carried value '{}' does not grow by the same step each iteration ({} -> {} -> {}): dynamic",
                    where(n, file), in->name, init->type.shape_string(), shape_text(first), again->type.shape_string());
      continue;
    }
    spdlog::debug("{}: carried value '{}' grows by a steady step over {} iterations: planned at {}", where(n, file),
                  in->name, *trips, shape_text(bound));
    const std::string what = where(n, file) + ": carried value '" + in->name + "' after " + std::to_string(*trips) + " steps";
    in->capacity_bytes = checked_mul(checked_element_count(bound, what), dtype_size(in->type.dtype), what);
    in->capacity_known = true;
    in->shape_varies = true;
  }
}

// A Loop's trip count and conditions are tensors; a carried value is a container (a sequence or
// an optional) in every iteration or in none: the session keeps the two apart.
void check_loop_containers(const Node& n, const Graph& body, const std::string& file) {
  const ControlFlowPorts ports(n);
  for (size_t i = 0; i < 2 && i < n.inputs.size(); ++i)
    if (n.inputs[i] && n.inputs[i]->type.is_container())
      fail(where(n, file) + ": its " + (i == 0 ? "trip count" : "condition") + " '" + n.inputs[i]->name + "' is " +
           a_container(n.inputs[i]->type.container));
  for (size_t i = 0; i < 2 && i < body.inputs.size(); ++i)
    if (body.inputs[i]->type.is_container())
      fail(where(n, file) + ": its body's " + (i == 0 ? "iteration number" : "condition") + " input '" +
           body.inputs[i]->name + "' is " + a_container(body.inputs[i]->type.container));
  if (body.outputs[0]->type.is_container())
    fail(where(n, file) + ": its body's condition '" + body.outputs[0]->name + "' is " +
         a_container(body.outputs[0]->type.container));
  for (size_t j = 0; j < ports.carried(); ++j) {
    const int32_t slot = ports.slot_of_carried(j);
    const Value* init = n.inputs[ports.first_carried_input() + j];
    const Value* out = body.outputs[static_cast<size_t>(ports.body_output_of_slot(slot))];
    // (An optional sequence may start what the body carries on as a sequence: test_loop16_seq_none.)
    if (init && init->type.is_container() != out->type.is_container())
      fail(where(n, file) + ": carried value " + std::to_string(j) + " starts as " + a_container(init->type.container) +
           " ('" + init->name + "') and the body returns " + a_container(out->type.container) + " ('" + out->name + "')");
  }
}

void infer_loop(Node& n, const std::string& file, const std::function<void(Graph&)>& infer) {
  Graph* body = n.subgraph("body");
  if (!body) fail(where(n, file) + ": Loop needs a body");
  const ControlFlowPorts ports(n);
  if (body->inputs.size() != ports.body_inputs())
    fail(where(n, file) + ": body takes " + std::to_string(body->inputs.size()) + " inputs, expected " +
         std::to_string(ports.body_inputs()) + " (iteration number, condition, carried values)");
  if (body->outputs.size() < ports.min_body_outputs())
    fail(where(n, file) + ": body returns fewer values than the condition and carried values");
  if (n.outputs.size() > ports.carried() + ports.scan_outputs(body->outputs.size()))
    fail(where(n, file) + ": the Loop has " + std::to_string(n.outputs.size()) + " outputs, its body makes " +
         std::to_string(ports.carried() + ports.scan_outputs(body->outputs.size())));
  std::vector<std::optional<TensorType>> widened(body->inputs.size());
  auto type_inputs = [&](Graph& g) {
    type_input(g.inputs[0], scalar(DType::Int64));
    type_input(g.inputs[1], scalar(DType::Bool));
    for (size_t k = 2; k < g.inputs.size(); ++k) {
      const Value* init = n.inputs[static_cast<size_t>(ports.body_input(k).node_port)];
      if (!init) fail(where(n, file) + ": carried value " + std::to_string(k - 2) + " has no initial value");
      type_input(g.inputs[k], init->type);
      if (widened[k]) g.inputs[k]->type = *widened[k];
    }
  };
  // A carried value may change shape across iterations (a decoder's token history gains a column
  // each time). The body is inferred for the initial values' shapes; where a carried value comes
  // back with another shape, its type is widened to cover both (ONNX's own Loop inference drops
  // the carried shapes altogether) and a fresh copy of the body, taken before inference folded
  // anything for the old shapes (a Shape of the token history), is inferred again, until no
  // carried type changes. Carried values that keep their shape keep their exact types.
  const std::unique_ptr<Graph> pristine = clone_graph(*body);
  type_inputs(*body);
  infer(*body);
  std::vector<std::optional<std::vector<int64_t>>> first_step(body->inputs.size());  // what iteration 0 writes
  for (size_t j = 0; j < ports.carried(); ++j) {
    const int32_t slot = ports.slot_of_carried(j);
    const Value* out = body->outputs[static_cast<size_t>(ports.body_output_of_slot(slot))];
    if (out->type.is_static()) first_step[ports.body_input_of_slot(slot)] = out->type.static_dims();
  }
  for (int round = 0;; ++round) {
    bool changed = false;
    for (size_t j = 0; j < ports.carried(); ++j) {
      const int32_t slot = ports.slot_of_carried(j);
      const size_t k = ports.body_input_of_slot(slot);
      const Value* in = body->inputs[k];
      const Value* out = body->outputs[static_cast<size_t>(ports.body_output_of_slot(slot))];
      // A size the body cannot tell but the user bounded (--bound) is planned at the bound.
      if (out->type.dtype == DType::Undefined || (!out->type.is_static() && out->capacity_known)) continue;
      const TensorType both = covering(in->type, out->type);
      if (same_shape(both, in->type)) continue;
      if (round >= kMaxWidenings)
        fail_unsupported(where(n, file) + ": carried value '" + in->name + "' changes shape across iterations (" +
                         in->type.shape_string() + " -> " + out->type.shape_string() + ") in ways shape inference cannot settle");
      widened[k] = both;
      changed = true;
    }
    if (!changed) break;
    body = replace_subgraph(n, *body, clone_graph(*pristine));
    type_inputs(*body);
    infer(*body);
  }
  check_loop_containers(n, *body, file);
  bound_growth_by_trip_count(n, *body, *pristine, widened, first_step, type_inputs, infer, file);
  for (size_t j = 0; j < ports.carried(); ++j) {
    const int32_t slot = ports.slot_of_carried(j);
    const Value* in = body->inputs[ports.body_input_of_slot(slot)];
    const Value* out = body->outputs[static_cast<size_t>(ports.body_output_of_slot(slot))];
    if (n.outputs.size() > j && n.outputs[j]) {
      n.outputs[j]->type = widened[ports.body_input_of_slot(slot)] ? in->type : n.inputs[ports.first_carried_input() + j]->type;
      if (n.outputs[j]->type.dtype == DType::Undefined) n.outputs[j]->type.dtype = out->type.dtype;
    }
  }
  // With a condition the loop may stop before M iterations: M only bounds the scan outputs.
  const Value* cond = n.inputs.size() > 1 ? n.inputs[1] : nullptr;
  const Value* body_cond = body->outputs[0];
  // A for-loop returns its condition input, often through Identity nodes.
  while (body_cond->producer && body_cond->producer->op_type == "Identity" && body_cond->graph == body &&
         !body_cond->producer->inputs.empty() && body_cond->producer->inputs[0])
    body_cond = body_cond->producer->inputs[0];
  const auto trips = constant_trip_count(n);
  const bool cond_always_true = (trips && *trips == 0) ||
                                ((!cond || (cond->constant && cond->constant->int_at(0) != 0)) &&
                                 (body_cond == body->inputs[1] ||
                                  (body_cond->constant && body_cond->constant->int_at(0) != 0)));
  for (size_t i = 0; i < ports.scan_outputs(body->outputs.size()); ++i) {
    const size_t o = ports.node_output_of_scan(i);
    Value* out = o < n.outputs.size() ? n.outputs[o] : nullptr;
    if (!out) continue;
    type_stacked(out, body->outputs[ports.body_output_of_node_output(o)], trips, cond_always_true, 0,
                 where(n, file) + " scan output '" + out->name + "'");
  }
}

// Scan from opset 9 scans along an axis of each input; opset 8 has a leading batch axis on every
// input and output, scans along axis 1, and takes sequence_lens as its first input.
void infer_scan(Node& n, const std::string& file, const std::function<void(Graph&)>& infer) {
  Graph* body = n.subgraph("body");
  if (!body) fail(where(n, file) + ": Scan needs a body");
  const bool batched = n.opset < 9;
  const ControlFlowPorts ports(n);
  const size_t first = ports.first_carried_input();
  const int64_t num_scan_inputs = n.attr_int("num_scan_inputs", 0);
  if (num_scan_inputs <= 0 || static_cast<uint64_t>(num_scan_inputs) + first > n.inputs.size())
    fail(where(n, file) + ": num_scan_inputs must be between 1 and the number of inputs");
  if (batched && n.inputs[0]) fail_unsupported(where(n, file) + ": Scan sequence_lens is not supported");
  const size_t states = ports.carried();
  if (body->inputs.size() != ports.body_inputs())
    fail(where(n, file) + ": body takes " + std::to_string(body->inputs.size()) + " inputs, the Scan has " +
         std::to_string(ports.body_inputs()));
  auto in_axes = n.attr_ints("scan_input_axes");
  auto out_axes = n.attr_ints("scan_output_axes");
  std::optional<int64_t> seq_len, batch;
  auto take_dim = [&](TensorType& t, size_t axis, std::optional<int64_t>& into, const char* what) {
    const Dim d = t.dims[axis];
    if (d.known()) {
      if (into && *into != d.value) fail(where(n, file) + ": inputs differ in " + what);
      into = d.value;
    }
    t.dims.erase(t.dims.begin() + static_cast<std::ptrdiff_t>(axis));
  };
  for (size_t k = 0; k + first < n.inputs.size(); ++k) {
    const Value* outer = n.inputs[k + first];
    if (!outer) fail(where(n, file) + ": inputs cannot be omitted");
    TensorType t = outer->type;
    const size_t min_rank = (batched ? 1 : 0) + (k < states ? 0 : 1);
    if (t.has_rank && t.dims.size() < min_rank) fail(where(n, file) + ": input '" + outer->name + "' has too low a rank");
    if (t.has_rank && batched) take_dim(t, 0, batch, "batch size");
    if (t.has_rank && k >= states) {
      const int64_t rank = static_cast<int64_t>(t.dims.size());
      int64_t axis = batched ? 0 : (k - states < in_axes.size() ? in_axes[k - states] : 0);
      if (axis < -rank || axis >= rank) fail(where(n, file) + ": scan input axis out of range");
      if (axis < 0) axis += rank;
      take_dim(t, static_cast<size_t>(axis), seq_len, "sequence length");
    }
    type_input(body->inputs[k], t);
  }
  infer(*body);
  if (body->outputs.size() != n.outputs.size())
    fail(where(n, file) + ": body returns " + std::to_string(body->outputs.size()) + " values, the Scan has " +
         std::to_string(n.outputs.size()) + " outputs");
  for (size_t k = 0; k < n.outputs.size(); ++k) {
    Value* out = n.outputs[k];
    if (!out) continue;
    const Value* elem = body->outputs[k];
    if (k < states) {
      out->type = elem->type;
    } else {
      int64_t axis = batched ? 0 : (k - states < out_axes.size() ? out_axes[k - states] : 0);
      const int64_t rank = elem->type.has_rank ? static_cast<int64_t>(elem->type.dims.size()) + 1 : 1;
      if (axis < -rank || axis >= rank) fail(where(n, file) + ": scan output axis out of range");
      if (axis < 0) axis += rank;
      type_stacked(out, elem, seq_len, true, static_cast<size_t>(axis), where(n, file));
    }
    if (batched && out->type.has_rank) out->type.dims.insert(out->type.dims.begin(), batch ? Dim{*batch, {}} : Dim{});
  }
}

}  // namespace

void infer_control_flow(Node& n, const std::string& file, const std::function<void(Graph&)>& infer_subgraph) {
  if (n.op_type == "If") infer_if(n, file, infer_subgraph);
  else if (n.op_type == "Loop") infer_loop(n, file, infer_subgraph);
  else infer_scan(n, file, infer_subgraph);
}

}  // namespace memplan
