// Sequences and optionals: the session's container (runtime/container_value.h), and the
// container ops, If and Loop over them, through the public API on hand-built models.
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include "memplan/error.h"
#include "memplan/memplan.h"
#include "runtime/container_value.h"
#include "support/model_builder.h"

using namespace memplan;
using namespace memplan::test;

namespace {

rt::TensorView float_view(std::vector<float>& data, std::vector<int64_t> dims) {
  rt::TensorView v;
  v.data = reinterpret_cast<std::byte*>(data.data());
  v.dtype = DType::Float32;
  v.rank = static_cast<int>(dims.size());
  for (size_t d = 0; d < dims.size(); ++d) v.dims[d] = dims[d];
  v.capacity = data.size() * sizeof(float);
  return v;
}

float first(const rt::TensorView& v) { return *v.as<float>(); }

onnx::ValueInfoProto sequence_info(const std::string& name, int32_t elem_type) {
  onnx::ValueInfoProto vi;
  vi.set_name(name);
  vi.mutable_type()->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type()->set_elem_type(elem_type);
  return vi;
}

onnx::ValueInfoProto optional_info(const std::string& name, int32_t elem_type) {
  onnx::ValueInfoProto vi;
  vi.set_name(name);
  vi.mutable_type()->mutable_optional_type()->mutable_elem_type()->mutable_tensor_type()->set_elem_type(elem_type);
  return vi;
}

std::shared_ptr<const CompiledModel> compile(const ModelBuilder& mb, const std::string& file) {
  const std::string path = (std::filesystem::temp_directory_path() / file).string();
  std::ofstream(path, std::ios::binary) << mb.bytes();
  return CompiledModel::compile(path, {});
}

std::vector<float> values(const TensorRef& t) {
  std::vector<float> out(t.bytes / sizeof(float));
  std::memcpy(out.data(), t.data, t.bytes);
  return out;
}

std::vector<int64_t> shape_of(const TensorRef& t) { return {t.shape.begin(), t.shape.end()}; }

TensorRef ref(const std::vector<float>& data, const std::vector<int64_t>& dims) {
  return {static_cast<int32_t>(DType::Float32), dims, data.data(), data.size() * sizeof(float)};
}

}  // namespace

TEST_CASE("container: insert and erase move elements, not bytes, and keep freed buffers for reuse", "[containers]") {
  std::vector<float> a{1}, b{2, 2}, c{3, 3, 3};
  rt::ContainerValue seq;
  seq.clear();
  seq.push_back(float_view(a, {1}));
  seq.push_back(float_view(c, {3}));
  seq.insert(1, float_view(b, {2}));
  REQUIRE(seq.size() == 3);
  CHECK(first(seq.at(0)) == 1);
  CHECK(first(seq.at(1)) == 2);
  CHECK(seq.at(1).dims[0] == 2);
  CHECK(first(seq.at(2)) == 3);
  a[0] = 9;  // the sequence holds copies
  CHECK(first(seq.at(0)) == 1);

  seq.erase(0);
  REQUIRE(seq.size() == 2);
  CHECK(first(seq.at(0)) == 2);
  const uint64_t held = seq.bytes_held();
  seq.clear();
  for (int round = 0; round < 3; ++round) seq.push_back(float_view(b, {2}));
  CHECK(seq.bytes_held() == held);  // three buffers were made; refilling takes them again

  rt::ContainerValue copy, other;
  copy.assign(seq);
  CHECK(copy.size() == 3);
  CHECK(copy.at(0).data != seq.at(0).data);
  other.clear();
  other.swap(copy);
  CHECK(other.size() == 3);
  CHECK(copy.size() == 0);
}

TEST_CASE("sequence ops: construct, insert, at, length, concat, split give ONNX's results", "[containers]") {
  ModelBuilder mb("sequences", 17, 8);
  auto& g = mb.graph();
  add_input(g, "x", elem::kFloat, {2, 3});
  add_input(g, "y", elem::kFloat, {1, 3});
  add_initializer(g, tensor_i64("zero", {}, {0}));
  add_initializer(g, tensor_i64("minus_one", {}, {-1}));
  add_initializer(g, tensor_i64("lengths", {2}, {1, 2}));
  add_node(g, "SequenceConstruct", {"x", "y"}, {"s"}, "construct");
  add_node(g, "SequenceInsert", {"s", "y", "zero"}, {"s2"}, "insert_front");
  add_node(g, "SequenceLength", {"s2"}, {"n"}, "length");
  add_node(g, "SequenceAt", {"s2", "minus_one"}, {"last"}, "at_last");
  attr_int(add_node(g, "ConcatFromSequence", {"s2"}, {"rows"}, "concat"), "axis", 0);
  add_node(g, "SplitToSequence", {"x", "lengths"}, {"pieces"}, "split");
  attr_int(g.mutable_node(g.node_size() - 1), "axis", 1);
  add_node(g, "SequenceErase", {"pieces", "zero"}, {"rest"}, "erase_first");
  g.add_output()->set_name("n");
  g.add_output()->set_name("last");
  g.add_output()->set_name("rows");
  *g.add_output() = sequence_info("rest", elem::kFloat);
  auto model = compile(mb, "memplan_sequences.onnx");
  REQUIRE(model->outputs()[3].kind == ValueKind::Sequence);

  Session s(model, SessionOptions{true});
  const std::vector<float> x{0, 1, 2, 3, 4, 5}, y{7, 8, 9};
  s.set_input("x", kFloat32, std::vector<int64_t>{2, 3}, x.data(), x.size() * 4);
  s.set_input("y", kFloat32, std::vector<int64_t>{1, 3}, y.data(), y.size() * 4);
  s.run();
  CHECK(*static_cast<const int64_t*>(s.output("n").data) == 3);
  CHECK(shape_of(s.output("last")) == std::vector<int64_t>{1, 3});
  CHECK(values(s.output("last")) == y);
  CHECK(shape_of(s.output("rows")) == std::vector<int64_t>{4, 3});
  CHECK(values(s.output("rows")) == std::vector<float>{7, 8, 9, 0, 1, 2, 3, 4, 5, 7, 8, 9});
  const std::vector<TensorRef> rest = s.output_sequence("rest");
  REQUIRE(rest.size() == 1);
  CHECK(shape_of(rest[0]) == std::vector<int64_t>{2, 2});
  CHECK(values(rest[0]) == std::vector<float>{1, 2, 4, 5});
  CHECK_THROWS_WITH(s.output("rest"), Catch::Contains("output_sequence"));
}

TEST_CASE("sequence input: tensors of different shapes, a different count each run, concatenated", "[containers]") {
  ModelBuilder mb("sequence_input", 17, 8);
  auto& g = mb.graph();
  *g.add_input() = sequence_info("parts", elem::kFloat);
  auto* concat = add_node(g, "ConcatFromSequence", {"parts"}, {"whole"}, "concat");
  attr_int(concat, "axis", 0);
  auto* stacked = add_node(g, "ConcatFromSequence", {"parts"}, {"firsts"}, "stack");
  attr_int(stacked, "axis", 1);
  g.add_output()->set_name("whole");
  auto model = compile(mb, "memplan_sequence_input.onnx");
  REQUIRE(model->inputs()[0].kind == ValueKind::Sequence);

  Session s(model, SessionOptions{true});
  const std::vector<float> a{1, 2}, b{3, 4, 5, 6}, c{7, 8};
  const std::vector<int64_t> row{1, 2}, square{2, 2};  // TensorRef's shape is a view: these outlive it
  std::vector<TensorRef> two{ref(a, row), ref(b, square)};
  s.set_input_sequence("parts", two);
  // Concatenated along axis 1 the rows would not match: the second op names itself.
  CHECK_THROWS_WITH(s.run(), Catch::Contains("ConcatFromSequence node 'stack'") && Catch::Contains("outside axis"));

  std::vector<TensorRef> three{ref(a, row), ref(c, row), ref(a, row)};
  s.set_input_sequence("parts", three);
  s.run();
  CHECK(shape_of(s.output("whole")) == std::vector<int64_t>{3, 2});
  CHECK(values(s.output("whole")) == std::vector<float>{1, 2, 7, 8, 1, 2});

  const std::vector<int64_t> wrong_dims{1, 2};
  CHECK_THROWS_WITH(s.set_input("parts", kFloat32, wrong_dims, a.data(), 8), Catch::Contains("set_input_sequence"));
  const std::vector<int32_t> ints{1, 2};
  std::vector<TensorRef> wrong_type{{static_cast<int32_t>(DType::Int32), wrong_dims, ints.data(), 8}};
  CHECK_THROWS_WITH(s.set_input_sequence("parts", wrong_type), Catch::Contains("holds float32 tensors"));
  // A refused list changes nothing: the last one set still runs.
  std::vector<TensorRef> good_then_bad{ref(a, row), wrong_type[0]};
  s.set_input_sequence("parts", three);
  CHECK_THROWS(s.set_input_sequence("parts", good_then_bad));
  s.run();
  CHECK(shape_of(s.output("whole")) == std::vector<int64_t>{3, 2});
}

TEST_CASE("sequence input: tensors must have the element shape the model declares", "[containers]") {
  ModelBuilder mb("declared_elements", 17, 8);
  auto& g = mb.graph();
  onnx::ValueInfoProto parts = sequence_info("parts", elem::kFloat);
  auto* shape = parts.mutable_type()->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type()->mutable_shape();
  shape->add_dim()->set_dim_param("k");
  shape->add_dim()->set_dim_value(2);
  *g.add_input() = parts;
  add_initializer(g, tensor_i64("zero", {}, {0}));
  add_node(g, "SequenceAt", {"parts", "zero"}, {"first"}, "first");
  g.add_output()->set_name("first");
  Session s(compile(mb, "memplan_declared_elements.onnx"), SessionOptions{true});
  const std::vector<float> v{1, 2, 3, 4, 5, 6};
  const std::vector<int64_t> k3{3, 2}, wrong{2, 3};
  std::vector<TensorRef> good{ref(v, k3)}, bad{ref(v, wrong)};
  s.set_input_sequence("parts", good);
  s.run();
  CHECK(shape_of(s.output("first")) == k3);
  CHECK_THROWS_WITH(s.set_input_sequence("parts", bad),
                    Catch::Contains("input 'parts' holds tensors of shape [k, 2], got [2, 3]"));
}

TEST_CASE("sequence ops refuse positions out of range and splits that do not add up, naming the node",
          "[containers]") {
  ModelBuilder mb("bad_positions", 17, 8);
  auto& g = mb.graph();
  add_input(g, "x", elem::kFloat, {2, 3});
  add_input(g, "pos", elem::kInt64, {});
  add_input(g, "lengths", elem::kInt64, {2});
  add_node(g, "SequenceConstruct", {"x"}, {"s"}, "construct");
  add_node(g, "SequenceAt", {"s", "pos"}, {"elem"}, "at");
  add_node(g, "SplitToSequence", {"x", "lengths"}, {"pieces"}, "split");
  attr_int(g.mutable_node(g.node_size() - 1), "axis", 1);
  add_node(g, "SequenceLength", {"pieces"}, {"count"}, "count");
  g.add_output()->set_name("elem");
  g.add_output()->set_name("count");
  auto model = compile(mb, "memplan_sequence_positions.onnx");
  Session s(model, SessionOptions{true});
  const std::vector<float> x(6, 1.f);
  auto run_with = [&](int64_t pos, std::vector<int64_t> lengths) {
    s.set_input("x", kFloat32, std::vector<int64_t>{2, 3}, x.data(), x.size() * 4);
    s.set_input("pos", kInt64, std::vector<int64_t>{}, &pos, 8);
    s.set_input("lengths", kInt64, std::vector<int64_t>{2}, lengths.data(), 16);
    s.run();
  };
  run_with(-1, {1, 2});
  CHECK(*static_cast<const int64_t*>(s.output("count").data) == 2);
  CHECK_THROWS_WITH(run_with(1, {1, 2}), Catch::Contains("SequenceAt node 'at'") && Catch::Contains("out of range"));
  CHECK_THROWS_WITH(run_with(-2, {1, 2}), Catch::Contains("out of range"));
  CHECK_THROWS_WITH(run_with(0, {2, 2}), Catch::Contains("SplitToSequence node 'split'") && Catch::Contains("add up"));
  CHECK_THROWS_WITH(run_with(0, {-1, 4}), Catch::Contains("add up"));
}

TEST_CASE("a Loop carries a sequence it appends to: the final list has one tensor per iteration", "[containers]") {
  // seq = []; for i in range(M): seq.append(x * i); return seq (a graph output, so no lowering
  // to a scan output applies).
  ModelBuilder mb("loop_sequence", 17, 8);
  auto& g = mb.graph();
  add_input(g, "M", elem::kInt64, {});
  add_input(g, "x", elem::kFloat, {2});
  auto* empty = add_node(g, "SequenceEmpty", {}, {"seq0"}, "empty");
  attr_int(empty, "dtype", elem::kFloat);
  onnx::GraphProto body = loop_body_skeleton("body");
  *body.add_input() = sequence_info("seq_in", elem::kFloat);
  add_node(body, "Cast", {"iter"}, {"i_f"}, "cast");
  attr_int(body.mutable_node(body.node_size() - 1), "to", elem::kFloat);
  add_node(body, "Mul", {"x", "i_f"}, {"scaled"}, "scale");
  add_node(body, "SequenceInsert", {"seq_in", "scaled"}, {"seq_out"}, "append");
  *body.add_output() = sequence_info("seq_out", elem::kFloat);
  auto* loop = add_node(g, "Loop", {"M", "", "seq0"}, {"seq"}, "loop");
  attr_graph(loop, "body", body);
  *g.add_output() = sequence_info("seq", elem::kFloat);
  auto model = compile(mb, "memplan_loop_sequence.onnx");

  for (bool guard : {false, true}) {
    SessionOptions options;
    options.adapt_to_load = false;
    options.check_memory = guard;
    Session s(model, options);
    const std::vector<float> x{1, 2};
    for (int64_t m : {int64_t{3}, int64_t{0}, int64_t{5}}) {
      s.set_input("M", kInt64, std::vector<int64_t>{}, &m, 8);
      s.set_input("x", kFloat32, std::vector<int64_t>{2}, x.data(), 8);
      s.run();
      const std::vector<TensorRef> seq = s.output_sequence("seq");
      REQUIRE(seq.size() == static_cast<size_t>(m));
      for (int64_t i = 0; i < m; ++i)
        CHECK(values(seq[static_cast<size_t>(i)]) == std::vector<float>{static_cast<float>(i), 2.f * static_cast<float>(i)});
    }
  }
}

TEST_CASE("an If returns sequences of different lengths from its branches", "[containers]") {
  ModelBuilder mb("if_sequence", 17, 8);
  auto& g = mb.graph();
  add_input(g, "c", elem::kBool, {});
  add_input(g, "x", elem::kFloat, {2});
  onnx::GraphProto then_b = branch_graph("then");
  add_node(then_b, "SequenceConstruct", {"x", "x"}, {"two"}, "two");
  *then_b.add_output() = sequence_info("two", elem::kFloat);
  onnx::GraphProto else_b = branch_graph("else");
  add_node(else_b, "SequenceConstruct", {"x"}, {"one"}, "one");
  *else_b.add_output() = sequence_info("one", elem::kFloat);
  auto* n = add_node(g, "If", {"c"}, {"seq"}, "if");
  attr_graph(n, "then_branch", then_b);
  attr_graph(n, "else_branch", else_b);
  add_node(g, "SequenceLength", {"seq"}, {"count"}, "count");
  g.add_output()->set_name("count");
  auto model = compile(mb, "memplan_if_sequence.onnx");
  Session s(model, SessionOptions{true});
  const std::vector<float> x{1, 2};
  for (bool c : {true, false}) {
    const uint8_t flag = c ? 1 : 0;
    s.set_input("c", kBool, std::vector<int64_t>{}, &flag, 1);
    s.set_input("x", kFloat32, std::vector<int64_t>{2}, x.data(), 8);
    s.run();
    CHECK(*static_cast<const int64_t*>(s.output("count").data) == (c ? 2 : 1));
  }
}

TEST_CASE("optionals: an input that holds nothing, Optional, OptionalHasElement and OptionalGetElement",
          "[containers]") {
  ModelBuilder mb("optionals", 18, 8);
  auto& g = mb.graph();
  *g.add_input() = optional_info("maybe", elem::kFloat);
  add_node(g, "OptionalHasElement", {"maybe"}, {"has"}, "has");
  add_node(g, "OptionalGetElement", {"maybe"}, {"value"}, "get");
  add_node(g, "Optional", {"value"}, {"wrapped"}, "wrap");
  g.add_output()->set_name("has");
  *g.add_output() = optional_info("wrapped", elem::kFloat);
  ModelBuilder only_has = mb;
  only_has.graph().mutable_node()->DeleteSubrange(1, 2);
  only_has.graph().mutable_output()->DeleteSubrange(1, 1);

  auto model = compile(mb, "memplan_optionals.onnx");
  REQUIRE(model->inputs()[0].kind == ValueKind::Optional);
  Session s(model, SessionOptions{true});
  const std::vector<float> v{4, 5};
  s.set_input("maybe", kFloat32, std::vector<int64_t>{2}, v.data(), 8);
  s.run();
  CHECK(*static_cast<const uint8_t*>(s.output("has").data) == 1);
  REQUIRE(s.output_has_value("wrapped"));
  CHECK(values(s.output("wrapped")) == v);
  s.set_input_none("maybe");
  CHECK_THROWS_WITH(s.run(), Catch::Contains("OptionalGetElement node 'get'") && Catch::Contains("holds no value"));

  Session h(compile(only_has, "memplan_optional_has.onnx"), SessionOptions{true});
  h.set_input_none("maybe");
  h.run();
  CHECK(*static_cast<const uint8_t*>(h.output("has").data) == 0);
}

TEST_CASE("a Loop whose condition is an optional, or whose carried tensor comes back a sequence, is refused naming "
          "it", "[containers]") {
  // Found by fuzz_onnx: the body's condition was Optional(cond_in), read as a bool tensor.
  const std::string finding = std::string(MEMPLAN_SOURCE_DIR) + "/test/fuzz/findings/fuzz_onnx/loop_condition_optional.onnx";
  CHECK_THROWS_WITH(CompiledModel::compile(finding, {}),
                    Catch::Contains("Loop node 'loop'") && Catch::Contains("its body's condition 'c_out' is an optional"));

  ModelBuilder mb("carried_kinds", 17, 8);
  auto& g = mb.graph();
  add_input(g, "M", elem::kInt64, {});
  add_input(g, "x", elem::kFloat, {2});
  onnx::GraphProto body = loop_body_skeleton("body");
  add_input(body, "x_in", elem::kFloat, {2});
  add_node(body, "SequenceConstruct", {"x_in"}, {"x_out"}, "wrap");
  *body.add_output() = sequence_info("x_out", elem::kFloat);
  attr_graph(add_node(g, "Loop", {"M", "", "x"}, {"y"}, "loop"), "body", body);
  *g.add_output() = sequence_info("y", elem::kFloat);
  CHECK_THROWS_WITH(compile(mb, "memplan_carried_kinds.onnx"),
                    Catch::Contains("carried value 0 starts as a tensor ('x') and the body returns a sequence ('x_out')"));
}

TEST_CASE("a sequence position that is not an integer is refused naming the node and the tensor", "[containers]") {
  // ONNX 1.12's inference lets a float position through; read as int64 it would be garbage.
  ModelBuilder mb("float_position", 17, 8);
  auto& g = mb.graph();
  add_input(g, "x", elem::kFloat, {2});
  add_input(g, "p", elem::kFloat, {});
  add_node(g, "SequenceConstruct", {"x"}, {"s"}, "construct");
  add_node(g, "SequenceAt", {"s", "p"}, {"y"}, "at");
  g.add_output()->set_name("y");
  Session s(compile(mb, "memplan_float_position.onnx"), SessionOptions{true});
  const std::vector<float> x{1, 2};
  const float p = 0;
  s.set_input("x", kFloat32, std::vector<int64_t>{2}, x.data(), 8);
  s.set_input("p", kFloat32, std::vector<int64_t>{}, &p, 4);
  CHECK_THROWS_WITH(s.run(), Catch::Contains("SequenceAt node 'at': its input 'p' is float32, not int32 or int64"));
}
