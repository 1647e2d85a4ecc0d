// Lists built by appending in a Loop (torch's scripted `out.append(x)`, an ONNX sequence carried
// through the body) are read as the Loop's scan output: stacked, concatenated, counted and
// indexed; any other use leaves the list a sequence, which the session runs as such.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <functional>

#include "memplan/memplan.h"
#include "support/model_builder.h"

using namespace memplan;
using namespace memplan::test;

namespace {

onnx::ValueInfoProto float_sequence(const std::string& name) {
  onnx::ValueInfoProto v;
  v.set_name(name);
  v.mutable_type()->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type()->set_elem_type(elem::kFloat);
  return v;
}

// n iterations append x * i to a list; `read` adds what reads the list after the loop.
ModelBuilder list_model(const std::function<void(onnx::GraphProto&)>& read) {
  ModelBuilder b("list", 17);
  auto& g = b.graph();
  add_input(g, "n", elem::kInt64, {});
  add_input(g, "x", elem::kFloat, {2});
  attr_int(add_node(g, "SequenceEmpty", {}, {"empty"}, "empty"), "dtype", elem::kFloat);
  onnx::GraphProto body = loop_body_skeleton("body");
  *body.add_input() = float_sequence("list_in");
  attr_int(add_node(body, "Cast", {"iter"}, {"i_f"}, "i_f"), "to", elem::kFloat);
  add_node(body, "Mul", {"x", "i_f"}, {"item"}, "item");
  add_node(body, "SequenceInsert", {"list_in", "item"}, {"list_out"}, "append");
  *body.add_output() = float_sequence("list_out");
  attr_graph(add_node(g, "Loop", {"n", "", "empty"}, {"list"}, "loop"), "body", body);
  read(g);
  return b;
}

std::vector<float> run(const ModelBuilder& b, const std::string& file, const std::string& output, int64_t n,
                       std::vector<int64_t>* shape) {
  const std::string path = (std::filesystem::temp_directory_path() / file).string();
  std::ofstream(path, std::ios::binary) << b.bytes();
  auto model = CompiledModel::compile(path, {});
  Session s(model, SessionOptions{true});
  const std::vector<float> x{1, 2};
  s.set_input("n", kInt64, std::vector<int64_t>{}, &n, 8);
  s.set_input("x", kFloat32, std::vector<int64_t>{2}, x.data(), 8);
  s.run();
  const TensorRef y = s.output(output);
  if (shape) shape->assign(y.shape.begin(), y.shape.end());
  const float* p = static_cast<const float*>(y.data);
  return {p, p + y.bytes / 4};
}

}  // namespace

TEST_CASE("loop-built list: stacked, concatenated, counted and indexed like the scan output it is", "[loop][sequence]") {
  ModelBuilder b = list_model([](onnx::GraphProto& g) {
    auto* stack = add_node(g, "ConcatFromSequence", {"list"}, {"stacked"}, "stack");
    attr_int(stack, "axis", 0);
    attr_int(stack, "new_axis", 1);
    attr_int(add_node(g, "ConcatFromSequence", {"list"}, {"joined"}, "cat"), "axis", 0);
    add_node(g, "SequenceLength", {"list"}, {"count"}, "count");
    add_initializer(g, tensor_i64("last", {}, {-1}));
    add_node(g, "SequenceAt", {"list", "last"}, {"newest"}, "newest");
    add_output_unranked(g, "stacked", elem::kFloat);
    add_output_unranked(g, "joined", elem::kFloat);
    add_output(g, "count", elem::kInt64, {});
    add_output_unranked(g, "newest", elem::kFloat);
  });
  std::vector<int64_t> shape;
  CHECK(run(b, "memplan_list_stack.onnx", "stacked", 3, &shape) == std::vector<float>{0, 0, 1, 2, 2, 4});
  CHECK(shape == std::vector<int64_t>{3, 2});
  CHECK(run(b, "memplan_list_cat.onnx", "joined", 3, &shape) == std::vector<float>{0, 0, 1, 2, 2, 4});
  CHECK(shape == std::vector<int64_t>{6});
  const std::string path = (std::filesystem::temp_directory_path() / "memplan_list_count.onnx").string();
  std::ofstream(path, std::ios::binary) << b.bytes();
  auto model = CompiledModel::compile(path, {});
  Session s(model, SessionOptions{true});
  const int64_t n = 4;
  const std::vector<float> x{1, 2};
  s.set_input("n", kInt64, std::vector<int64_t>{}, &n, 8);
  s.set_input("x", kFloat32, std::vector<int64_t>{2}, x.data(), 8);
  s.run();
  CHECK(*static_cast<const int64_t*>(s.output("count").data) == 4);
  const auto* newest = static_cast<const float*>(s.output("newest").data);
  CHECK(std::vector<float>(newest, newest + 2) == std::vector<float>{3, 6});
}

TEST_CASE("loop-built list: any other use of the list keeps it a sequence, which the session runs",
          "[loop][sequence]") {
  // The erase is no read the rewrite knows: the Loop carries the sequence itself.
  ModelBuilder b = list_model([](onnx::GraphProto& g) {
    add_node(g, "SequenceErase", {"list"}, {"shorter"}, "erase");
    attr_int(add_node(g, "ConcatFromSequence", {"shorter"}, {"joined"}, "cat"), "axis", 0);
    add_output_unranked(g, "joined", elem::kFloat);
  });
  std::vector<int64_t> shape;
  CHECK(run(b, "memplan_list_erase.onnx", "joined", 4, &shape) == std::vector<float>{0, 0, 1, 2, 2, 4});
  CHECK(shape == std::vector<int64_t>{6});
}

TEST_CASE("a tensor split into a list and iterated in a loop is read as the tensor itself", "[loop][sequence]") {
  // for t in torch.unbind(x): acc = acc + t  (a SplitToSequence, counted for the trip count and
  // indexed by the loop counter inside the body), with keepdims 0, and 1 (each item [1, 2]).
  for (const int64_t keep : {0, 1}) {
    INFO("keepdims " << keep);
    ModelBuilder b("split_list", 17);
    auto& g = b.graph();
    add_input(g, "x", elem::kFloat, {3, 2});
    add_input(g, "acc0", elem::kFloat, keep ? Shape{1, 2} : Shape{2});
    auto* split = add_node(g, "SplitToSequence", {"x"}, {"items"}, "unbind");
    attr_int(split, "axis", 0);
    attr_int(split, "keepdims", keep);
    add_node(g, "SequenceLength", {"items"}, {"count"}, "count");
    onnx::GraphProto body = loop_body_skeleton("body");
    add_input_unranked(body, "acc_in", elem::kFloat);
    add_node(body, "SequenceAt", {"items", "iter"}, {"item"}, "item");
    add_node(body, "Add", {"acc_in", "item"}, {"acc_out"}, "add");
    add_output_unranked(body, "acc_out", elem::kFloat);
    attr_graph(add_node(g, "Loop", {"count", "", "acc0"}, {"sum"}, "loop"), "body", body);
    add_output_unranked(g, "sum", elem::kFloat);
    const std::string path = (std::filesystem::temp_directory_path() / "memplan_split_list.onnx").string();
    std::ofstream(path, std::ios::binary) << b.bytes();
    auto model = CompiledModel::compile(path, {});
    Session s(model, SessionOptions{true});
    const std::vector<float> x{1, 2, 3, 4, 5, 6}, acc0{0, 0};
    s.set_input("x", kFloat32, std::vector<int64_t>{3, 2}, x.data(), 24);
    s.set_input("acc0", kFloat32, keep ? std::vector<int64_t>{1, 2} : std::vector<int64_t>{2}, acc0.data(), 8);
    s.run();
    const TensorRef sum = s.output("sum");
    const auto* p = static_cast<const float*>(sum.data);
    CHECK(std::vector<float>(p, p + 2) == std::vector<float>{9, 12});
    CHECK(sum.shape.size() == (keep ? 2u : 1u));
  }
}
