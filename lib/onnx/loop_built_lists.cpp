#include "onnx/loop_built_lists.h"

#include <onnx/onnx_pb.h>

#include <functional>
#include <set>
#include <string>
#include <vector>

namespace memplan {
namespace {

using onnx::GraphProto;
using onnx::NodeProto;

// Calls f on every node of g and of the graphs nested in it, with the graph holding the node.
void for_each_node(GraphProto& g, const std::function<void(GraphProto&, NodeProto&)>& f) {
  for (NodeProto& n : *g.mutable_node()) {
    f(g, n);
    for (auto& a : *n.mutable_attribute()) {
      if (a.has_g()) for_each_node(*a.mutable_g(), f);
      for (GraphProto& sub : *a.mutable_graphs()) for_each_node(sub, f);
    }
  }
}

int64_t int_attribute(const NodeProto& n, const std::string& name, int64_t fallback) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return a.i();
  return fallback;
}

GraphProto* body_of(NodeProto& loop) {
  for (auto& a : *loop.mutable_attribute())
    if (a.name() == "body" && a.has_g()) return a.mutable_g();
  return nullptr;
}

// Every node reading `name` in g and below (by name: the exporter's names are unique).
std::vector<NodeProto*> readers(GraphProto& g, const std::string& name) {
  std::vector<NodeProto*> out;
  for_each_node(g, [&](GraphProto&, NodeProto& n) {
    for (const std::string& in : n.input())
      if (in == name) {
        out.push_back(&n);
        break;
      }
  });
  return out;
}

bool returned(const GraphProto& g, const std::string& name) {
  for (const auto& o : g.output())
    if (o.name() == name) return true;
  return false;
}

// The reads of a list a rewrite can replace.
bool replaceable(const NodeProto& n) {
  if (n.input_size() < 1) return false;
  if (n.op_type() == "SequenceLength") return n.input_size() == 1;
  if (n.op_type() == "SequenceAt") return n.input_size() == 2;
  if (n.op_type() == "ConcatFromSequence")
    return int_attribute(n, "axis", 0) == 0 && int_attribute(n, "new_axis", 0) >= 0 && int_attribute(n, "new_axis", 0) <= 1;
  return false;
}

class Lowering {
 public:
  explicit Lowering(GraphProto& main) : main_(main) {}

  int run() {
    int done = split_lists();
    // One list at a time, found first and then rewritten: a rewrite changes the node lists.
    while (true) {
      GraphProto* graph = nullptr;
      NodeProto* loop = nullptr;
      int input = -1;
      for_each_node(main_, [&](GraphProto& g, NodeProto& n) {
        if (loop || n.op_type() != "Loop" || !n.domain().empty()) return;
        for (int k = 2; k < n.input_size() && !loop; ++k)
          if (lowerable(g, n, k)) graph = &g, loop = &n, input = k;
      });
      if (!loop) return done;
      lower(*graph, *loop, input);
      ++done;
    }
  }

 private:
  std::string fresh(const std::string& base) { return base + "_list" + std::to_string(++names_); }

  static int index_of(const GraphProto& g, const std::string& output) {
    for (int i = 0; i < g.node_size(); ++i)
      for (const std::string& o : g.node(i).output())
        if (o == output) return i;
    return -1;
  }
  static NodeProto* producer(GraphProto& g, const std::string& output) {
    const int i = index_of(g, output);
    return i < 0 ? nullptr : g.mutable_node(i);
  }

  // Whether Loop input k (carried value k - 2) is a list built by appending, read only in ways
  // replace_reads() rewrites.
  bool lowerable(GraphProto& g, NodeProto& loop, int k) {
    GraphProto* body = body_of(loop);
    const std::string& init = loop.input(k);
    NodeProto* empty = init.empty() ? nullptr : producer(g, init);
    if (!body || !empty || empty->op_type() != "SequenceEmpty") return false;
    const int carried = k - 2;
    if (k >= body->input_size() || carried + 1 >= body->output_size()) return false;
    const std::string in = body->input(k).name(), out = body->output(carried + 1).name();
    // The body appends at the end, once, and reads the list nowhere else.
    NodeProto* insert = producer(*body, out);
    if (!insert || insert->op_type() != "SequenceInsert" || insert->input_size() != 2 || insert->input(0) != in)
      return false;
    if (readers(*body, in).size() != 1 || !readers(*body, out).empty() || returned(*body, in)) return false;
    for (int o = 0; o < body->output_size(); ++o)
      if (o != carried + 1 && body->output(o).name() == out) return false;
    if (readers(main_, init).size() != 1) return false;  // the empty list feeds this Loop only
    // After the loop: only reads a rewrite can replace (If branches included); not returned.
    if (carried >= loop.output_size() || loop.output(carried).empty()) return true;
    const std::string& list = loop.output(carried);
    if (returned(main_, list) || returned(g, list)) return false;
    for (NodeProto* u : readers(main_, list))
      if (!replaceable(*u) || u->input(0) != list) return false;
    return true;
  }

  void lower(GraphProto& g, NodeProto& loop, int k) {
    GraphProto& body = *body_of(loop);
    const int carried = k - 2;
    const std::string init = loop.input(k), in = body.input(k).name(), out = body.output(carried + 1).name();
    const std::string list = carried < loop.output_size() ? loop.output(carried) : "";
    const int insert = index_of(body, out);
    const std::string element = body.node(insert).input(1);
    const std::string stacked = fresh(list.empty() ? out : list);
    // The body: the appended tensor becomes a scan output.
    body.mutable_node()->DeleteSubrange(insert, 1);
    body.mutable_input()->DeleteSubrange(k, 1);
    body.mutable_output()->DeleteSubrange(carried + 1, 1);
    body.add_output()->set_name(element);
    drop_value_info(body, {in, out});
    // The Loop: one carried value less, one scan output more.
    loop.mutable_input()->DeleteSubrange(k, 1);
    if (carried < loop.output_size()) loop.mutable_output()->DeleteSubrange(carried, 1);
    loop.add_output(stacked);
    g.mutable_node()->DeleteSubrange(index_of(g, init), 1);  // the SequenceEmpty
    drop_value_info(g, {init, list});
    if (!list.empty()) replace_reads(list, stacked);
  }

  // SplitToSequence(x, axis a) without sizes: element i is x's slice i along a (a dim of 1 kept
  // with keepdims). Read by index or counted, it is x itself: SequenceAt(i) is Gather(x, i, axis
  // a) (the index made a 1-element vector to keep the dim), SequenceLength is x's dim a. The
  // split node goes where every read is one of these.
  int split_lists() {
    std::vector<std::pair<GraphProto*, NodeProto*>> splits;
    for_each_node(main_, [&](GraphProto& g, NodeProto& n) {
      if (n.op_type() == "SplitToSequence" && n.domain().empty() && n.input_size() == 1 && n.output_size() == 1)
        splits.emplace_back(&g, &n);
    });
    int done = 0;
    for (auto [g, split] : splits) {
      const std::string list = split->output(0), x = split->input(0);
      if (returned(main_, list)) continue;
      std::vector<std::pair<GraphProto*, NodeProto*>> reads;
      bool all = true;
      for_each_node(main_, [&](GraphProto& rg, NodeProto& r) {
        for (int i = 0; i < r.input_size(); ++i)
          if (r.input(i) == list) {
            all = all && i == 0 && ((r.op_type() == "SequenceAt" && r.input_size() == 2) ||
                                    (r.op_type() == "SequenceLength" && r.input_size() == 1));
            reads.emplace_back(&rg, &r);
          }
      });
      if (!all) continue;
      const int64_t axis = int_attribute(*split, "axis", 0), keep = int_attribute(*split, "keepdims", 1);
      for (auto [rg, r] : reads) {
        if (r->op_type() == "SequenceLength") {
          const std::string shape = fresh("shape"), at = fresh("axis");
          add_constant(*rg, at, axis);
          add_node(*rg, "Shape", {x}, shape);
          r->set_op_type("Gather");
          r->set_input(0, shape);
          r->add_input(at);
          r->clear_attribute();
          continue;
        }
        r->set_op_type("Gather");
        r->set_input(0, x);
        r->clear_attribute();
        auto* a = r->add_attribute();
        a->set_name("axis");
        a->set_type(onnx::AttributeProto::INT);
        a->set_i(axis);
        if (keep) {  // a 1-element index keeps the dim
          const std::string one = fresh("one"), index = fresh("index");
          add_constant_1d(*rg, one, 1);
          add_node(*rg, "Reshape", {r->input(1), one}, index);
          r->set_input(1, index);
        }
      }
      g->mutable_node()->DeleteSubrange(index_of(*g, list), 1);
      drop_value_info(*g, {list});
      ++done;
    }
    return done;
  }

  static void drop_value_info(GraphProto& g, const std::set<std::string>& names) {
    auto& vi = *g.mutable_value_info();
    for (int i = vi.size() - 1; i >= 0; --i)
      if (names.count(vi.Get(i).name())) vi.erase(vi.begin() + i);
  }

  void replace_reads(const std::string& list, const std::string& stacked) {
    // Found first, then rewritten: a rewrite adds nodes to the reader's graph.
    std::vector<std::pair<GraphProto*, NodeProto*>> reads;
    for_each_node(main_, [&](GraphProto& g, NodeProto& n) {
      if (n.input_size() > 0 && n.input(0) == list) reads.emplace_back(&g, &n);
    });
    for (auto [g, n] : reads) {  // protobuf keeps a repeated field's elements where they are
      if (n->op_type() == "SequenceAt") {
        // Gather along the stacking axis: a scalar index picks one element, negative from the end.
        n->set_op_type("Gather");
        n->set_input(0, stacked);
        n->clear_attribute();
      } else if (n->op_type() == "SequenceLength") {
        const std::string shape = fresh("shape"), zero = fresh("zero");
        add_constant(*g, zero, 0);
        add_node(*g, "Shape", {stacked}, shape);
        n->set_op_type("Gather");
        n->set_input(0, shape);
        n->add_input(zero);
        n->clear_attribute();
      } else if (int_attribute(*n, "new_axis", 0) == 1) {
        n->set_op_type("Identity");
        n->set_input(0, stacked);
        n->clear_attribute();
      } else {
        merge_first_two_axes(*g, *n, stacked);
      }
    }
  }

  // Concatenating the elements along axis 0 is the stack with its first two axes merged.
  void merge_first_two_axes(GraphProto& g, NodeProto& n, const std::string& stacked) {
    const std::string shape = fresh("shape"), head = fresh("head"), rest = fresh("rest"), count = fresh("count"),
                      target = fresh("target"), c0 = fresh("c0"), c2 = fresh("c2"), cmax = fresh("cmax");
    add_constant_1d(g, c0, 0);
    add_constant_1d(g, c2, 2);
    add_constant_1d(g, cmax, INT64_MAX);
    add_node(g, "Shape", {stacked}, shape);
    add_node(g, "Slice", {shape, c0, c2}, head);
    add_node(g, "Slice", {shape, c2, cmax}, rest);
    NodeProto* prod = add_node(g, "ReduceProd", {head}, count);
    auto* keep = prod->add_attribute();
    keep->set_name("keepdims");
    keep->set_type(onnx::AttributeProto::INT);
    keep->set_i(1);
    NodeProto* cat = add_node(g, "Concat", {count, rest}, target);
    auto* axis = cat->add_attribute();
    axis->set_name("axis");
    axis->set_type(onnx::AttributeProto::INT);
    axis->set_i(0);
    n.set_op_type("Reshape");
    n.clear_input();
    n.add_input(stacked);
    n.add_input(target);
    n.clear_attribute();
  }

  NodeProto* add_node(GraphProto& g, const std::string& op, const std::vector<std::string>& inputs, const std::string& output) {
    NodeProto* n = g.add_node();
    n->set_op_type(op);
    n->set_name(output);
    for (const std::string& i : inputs) n->add_input(i);
    n->add_output(output);
    return n;
  }

  void add_constant(GraphProto& g, const std::string& name, int64_t v, bool one_d = false) {
    NodeProto* c = add_node(g, "Constant", {}, name);
    auto* a = c->add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    onnx::TensorProto* t = a->mutable_t();
    t->set_data_type(onnx::TensorProto::INT64);
    if (one_d) t->add_dims(1);
    t->add_int64_data(v);
  }
  void add_constant_1d(GraphProto& g, const std::string& name, int64_t v) { add_constant(g, name, v, true); }

  GraphProto& main_;
  int names_ = 0;
};

}  // namespace

int lower_loop_built_lists(onnx::ModelProto& model) {
  if (!model.has_graph()) return 0;
  return Lowering(*model.mutable_graph()).run();
}

}  // namespace memplan
