// Importing a file reads its large initializers straight into their tensors (onnx/inline_weights.h):
// the same values as parsing the bytes whole, and the same one-line errors for a hostile file.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "memplan/error.h"
#include "onnx/importer.h"
#include "onnx/inline_weights.h"
#include "support/model_builder.h"
#include "support/temp_dir.h"

namespace mt = memplan::test;

namespace {

// x [1, 300] -> Gemm(w [300, 300], transB) -> Add(b [300]): w is read out of line, b stays inline.
std::string fc_model(const std::vector<int64_t>& w_dims, size_t w_values) {
  mt::ModelBuilder mb;
  auto& g = mb.graph();
  mt::add_input(g, "x", mt::elem::kFloat, {1, 300});
  std::vector<float> w(w_values), b(300);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 977) * 0.001f - 0.5f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i);
  mt::add_initializer(g, mt::tensor_f32("w", w_dims, w));
  mt::add_initializer(g, mt::tensor_f32("b", {300}, b));
  auto* n = mt::add_node(g, "Gemm", {"x", "w", "b"}, {"y"}, "fc");
  auto* a = n->add_attribute();
  a->set_name("transB");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(1);
  mt::add_output(g, "y", mt::elem::kFloat, {1, 300});
  return mb.bytes();
}

std::string write(const mt::TempDir& dir, const std::string& name, const std::string& bytes) {
  const std::string path = dir / name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

const memplan::Tensor& initializer(const memplan::Model& m, const std::string& name) {
  for (const memplan::Value* v : m.main->initializers)
    if (v->name == name) return *v->constant;
  FAIL("no initializer " << name);
  throw;
}

}  // namespace

TEST_CASE("a file's large initializer read out of line holds the values parsing the bytes whole gives", "[import]") {
  mt::TempDir dir("inline_weights");
  const std::string bytes = fc_model({300, 300}, 300 * 300);
  const memplan::Model from_file = memplan::import_model(write(dir, "fc.onnx", bytes));
  const memplan::Model from_bytes = memplan::import_model_bytes(bytes, "fc.onnx");
  CHECK(initializer(from_file, "w").bytes == initializer(from_bytes, "w").bytes);
  CHECK(initializer(from_file, "b").bytes == initializer(from_bytes, "b").bytes);
  CHECK(initializer(from_file, "w").bytes.size() == 300 * 300 * 4);
  CHECK(from_file.sha256 == from_bytes.sha256);  // the file's own hash, not the rewritten copy's
}

TEST_CASE("the rewrite points a large raw_data at its bytes in the file and leaves a small one inline", "[import]") {
  const std::string bytes = fc_model({300, 300}, 300 * 300);
  std::istringstream in(bytes);
  const std::optional<std::string> lean = memplan::out_of_line_weights(in, bytes.size(), "fc.onnx");
  REQUIRE(lean);
  CHECK(lean->size() < bytes.size() - 300 * 300 * 4 + 200);  // w's 360,000 bytes are gone
  onnx::ModelProto mp;
  REQUIRE(mp.ParseFromString(*lean));
  const onnx::TensorProto& w = mp.graph().initializer(0);
  CHECK_FALSE(w.has_raw_data());
  CHECK(w.data_location() == onnx::TensorProto::EXTERNAL);
  REQUIRE(w.external_data_size() == 3);
  CHECK(w.external_data(0).value() == "fc.onnx");
  const uint64_t offset = std::stoull(w.external_data(1).value()), length = std::stoull(w.external_data(2).value());
  CHECK(length == 300 * 300 * 4);
  onnx::ModelProto whole;
  REQUIRE(whole.ParseFromString(bytes));
  CHECK(bytes.substr(offset, length) == whole.graph().initializer(0).raw_data());
  CHECK(mp.graph().initializer(1).has_raw_data());  // b: 1,200 bytes
}

TEST_CASE("a file cut inside a large weight's bytes fails in one line naming the file", "[import]") {
  mt::TempDir dir("inline_weights_cut");
  const std::string bytes = fc_model({300, 300}, 300 * 300);
  const std::string path = write(dir, "cut.onnx", bytes.substr(0, bytes.size() / 2));
  CHECK_THROWS_WITH(memplan::import_model(path), Catch::StartsWith(path + ": not a valid ONNX model"));
  std::istringstream in(bytes.substr(0, bytes.size() / 2));
  CHECK_FALSE(memplan::out_of_line_weights(in, bytes.size() / 2, "cut.onnx"));
}

TEST_CASE("a large initializer whose bytes do not fit its shape fails naming it", "[import]") {
  mt::TempDir dir("inline_weights_shape");
  // 90,000 floats under dims [300, 299].
  const std::string path = write(dir, "fc.onnx", fc_model({300, 299}, 300 * 300));
  CHECK_THROWS_WITH(memplan::import_model(path),
                    Catch::Contains("initializer 'w'") && Catch::Contains("holds 360000 bytes but its shape needs 358800"));
}

TEST_CASE("wire data that is not protobuf is left to protobuf's own parse", "[import]") {
  for (const std::string& bytes : {std::string("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 11),  // a varint past 64 bits
                                  std::string("\x3a\x80\x80\x04", 4),  // graph, 65,536 bytes long, none there
                                  std::string("\x3b\x00", 2)}) {       // a group (wire type 3)
    std::istringstream in(bytes);
    CHECK_FALSE(memplan::out_of_line_weights(in, bytes.size(), "m.onnx"));
  }
}

namespace {

// x [1, 300] -> MatMul(Constant w [300, 300]) -> If(c): then MatMul(Constant [300, 300]), else
// Identity: the weights as Paddle2ONNX and tf2onnx write them, in Constant nodes, one of them in a
// subgraph.
std::string constants_model() {
  std::vector<float> w(300 * 300), v(300 * 300);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 613) * 0.002f - 0.6f;
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 419) * 0.003f - 0.5f;
  mt::ModelBuilder mb;
  auto& g = mb.graph();
  mt::add_input(g, "x", mt::elem::kFloat, {1, 300});
  mt::add_input(g, "c", mt::elem::kBool, {});
  mt::add_constant(g, mt::tensor_f32("w", {300, 300}, w));
  mt::add_node(g, "MatMul", {"x", "w"}, {"h"}, "fc");
  onnx::GraphProto then_branch = mt::branch_graph("then");
  mt::add_constant(then_branch, mt::tensor_f32("v", {300, 300}, v));
  mt::add_node_to_output(then_branch, "MatMul", {"h", "v"}, mt::value_info("t", mt::elem::kFloat, {1, 300}), "fc2");
  const onnx::GraphProto else_branch =
      mt::one_node_branch("else", "Identity", {"h"}, mt::value_info("e", mt::elem::kFloat, {1, 300}), "same");
  mt::add_if(g, "c", {"y"}, then_branch, else_branch);
  mt::add_output(g, "y", mt::elem::kFloat, {1, 300});
  return mb.bytes();
}

// The bytes of the constant named `name` in g or its subgraphs (empty when none).
std::string constant_bytes(memplan::Graph& g, const std::string& name) {
  std::string out;
  memplan::for_each_graph(g, [&](memplan::Graph& sub) {
    for (const auto& v : sub.values)
      if (v->name == name && v->constant)
        out.assign(reinterpret_cast<const char*>(v->constant->bytes.data()), v->constant->bytes.size());
  });
  return out;
}

}  // namespace

TEST_CASE("Constant nodes' large values, in the main graph and in subgraphs, are read out of line too", "[import]") {
  mt::TempDir dir("inline_weights_constants");
  const std::string bytes = constants_model();
  std::istringstream in(bytes);
  const std::optional<std::string> lean = memplan::out_of_line_weights(in, bytes.size(), "m.onnx");
  REQUIRE(lean);
  CHECK(lean->size() < bytes.size() - 2 * 300 * 300 * 4 + 400);  // both values' 360,000 bytes are gone
  memplan::Model from_file = memplan::import_model(write(dir, "m.onnx", bytes));
  memplan::Model from_bytes = memplan::import_model_bytes(bytes, "m.onnx");
  for (const char* name : {"w", "v"}) {
    INFO(name);
    const std::string got = constant_bytes(*from_file.main, name);
    CHECK(got.size() == 300 * 300 * 4);
    CHECK(got == constant_bytes(*from_bytes.main, name));
  }
}

TEST_CASE("graphs nested past the rewrite's depth are left to protobuf's parse", "[import]") {
  auto field = [](uint32_t number, const std::string& payload) {
    std::string f(1, static_cast<char>((number << 3) | 2));
    for (uint64_t n = payload.size();; n >>= 7) {
      f.push_back(static_cast<char>(n >= 0x80 ? (n & 0x7f) | 0x80 : n));
      if (n < 0x80) break;
    }
    return f + payload;
  };
  // ModelProto.graph { node { attribute { g { node { ... } } } } }, 300 graphs deep: well-formed
  // wire data, and 900 messages of the rewrite's recursion.
  std::string graph;
  for (int i = 0; i < 300; ++i) graph = field(1, field(5, field(6, graph)));
  const std::string bytes = field(7, graph);
  std::istringstream in(bytes);
  CHECK_FALSE(memplan::out_of_line_weights(in, bytes.size(), "deep.onnx"));
  // Well-formed: protobuf parses it under the importer's recursion limit (its default is 100).
  google::protobuf::io::ArrayInputStream raw(bytes.data(), static_cast<int>(bytes.size()));
  google::protobuf::io::CodedInputStream coded(&raw);
  coded.SetRecursionLimit(3 * 1200);
  onnx::ModelProto mp;
  CHECK(mp.ParseFromCodedStream(&coded));
}
