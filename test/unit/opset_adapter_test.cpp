// The opset adapter (onnx/opset_adapter.h): ai.onnx 18-23 nodes on tiny hand-built graphs become
// the version-17 form ONNX 1.12 infers and memplan runs, or are refused naming op, version and
// node; its rule table is complete and docs/OPSETS.md is the table.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "memplan/error.h"
#include "memplan/memplan.h"
#include "onnx/opset_adapter.h"
#include "pipeline/compile_pipeline.h"
#include "support/model_builder.h"
#include "support/numeric.h"

using namespace memplan;
using namespace memplan::test;

namespace {

const Node& only_node(const Model& m, const std::string& op) {
  const Node* found = nullptr;
  for (const auto& n : m.main->nodes)
    if (n->op_type == op) found = n.get();
  REQUIRE(found);
  return *found;
}

const Value& value(const Model& m, const std::string& name) {
  for (const auto& v : m.main->values)
    if (v->name == name) return *v;
  FAIL("no value " << name);
  throw;
}

// x [2, 3, 4] -> `op` (opset `opset`) with `inputs` after x -> y; the rest is the caller's.
ModelBuilder one_op(const std::string& op, int64_t opset, const std::vector<std::string>& inputs,
                    const std::vector<std::string>& outputs = {"y"}) {
  ModelBuilder mb("adapt", opset, opset >= 21 ? 10 : opset >= 19 ? 9 : 8);
  add_input(mb.graph(), "x", elem::kFloat, {2, 3, 4});
  std::vector<std::string> in{"x"};
  in.insert(in.end(), inputs.begin(), inputs.end());
  add_node(mb.graph(), op, in, outputs, "node");
  for (const std::string& o : outputs) mb.graph().add_output()->set_name(o);
  return mb;
}

std::string refusal(const ModelBuilder& mb) {
  try {
    Model m = mb.import("adapt.onnx");
    prepare_model(m, {});
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::Unsupported);
    return e.what();
  }
  FAIL("not refused");
  return {};
}

}  // namespace

TEST_CASE("opset adapter: every op version of opsets 18-23 has one rule, and docs/OPSETS.md is the table", "[opsets]") {
  std::set<std::pair<std::string, int>> seen;
  for (const OpsetRule& r : opset_rules()) {
    INFO(r.op << "-" << r.since);
    CHECK(r.since >= 18);
    CHECK(r.since <= 23);
    CHECK(seen.insert({r.op, r.since}).second);
    CHECK_FALSE(r.how.empty());
  }
  CHECK(seen.count({"ReduceMean", 18}));
  CHECK(seen.count({"Pad", 23}));
  std::ifstream doc(std::filesystem::path(MEMPLAN_SOURCE_DIR) / "docs" / "OPSETS.md");
  std::stringstream text;
  text << doc.rdbuf();
  CHECK(text.str() == opset_rules_markdown());  // regenerate: memplan opsets > docs/OPSETS.md
}

TEST_CASE("opset adapter: Reduce* axes as an input become the attribute, none reduce all or are a no-op", "[opsets]") {
  SECTION("constant axes") {
    ModelBuilder mb = one_op("ReduceMean", 18, {"axes"});
    add_initializer(mb.graph(), tensor_i64("axes", {2}, {0, -1}));
    attr_int(mb.graph().mutable_node(0), "keepdims", 0);
    Model m = mb.import();
    prepare_model(m, {});
    const Node& n = only_node(m, "ReduceMean");
    CHECK(n.opset == kOnnxSchemaOpset);
    CHECK(n.inputs.size() == 1);
    CHECK(n.attr_ints("axes") == std::vector<int64_t>{0, -1});
    CHECK(value(m, "y").type.static_dims() == std::vector<int64_t>{3});
  }
  SECTION("no axes: every axis") {
    Model m = one_op("ReduceMax", 20, {}).import();
    prepare_model(m, {});
    CHECK(value(m, "y").type.static_dims() == std::vector<int64_t>{1, 1, 1});
  }
  SECTION("no axes with noop_with_empty_axes: the input itself") {
    ModelBuilder mb = one_op("ReduceL2", 18, {});
    attr_int(mb.graph().mutable_node(0), "noop_with_empty_axes", 1);
    Model m = mb.import();
    prepare_model(m, {});
    CHECK(value(m, "y").type.static_dims() == std::vector<int64_t>{2, 3, 4});
  }
  SECTION("axes computed at run time are refused, naming the node") {
    ModelBuilder mb = one_op("ReduceMean", 18, {"axes"});
    add_input(mb.graph(), "axes", elem::kInt64, {1});
    CHECK_THAT(refusal(mb), Catch::Contains("ReduceMean node 'node'") && Catch::Contains("ReduceMean-18") &&
                                Catch::Contains("computed at run time"));
  }
}

TEST_CASE("opset adapter: Split's num_outputs become split sizes, the last chunk smaller", "[opsets]") {
  ModelBuilder mb("split", 18, 8);
  add_input(mb.graph(), "x", elem::kFloat, {10, 2});
  attr_int(add_node(mb.graph(), "Split", {"x"}, {"a", "b", "c"}, "split"), "num_outputs", 3);
  for (const char* o : {"a", "b", "c"}) mb.graph().add_output()->set_name(o);
  Model m = mb.import();
  prepare_model(m, {});
  CHECK(value(m, "a").type.static_dims() == std::vector<int64_t>{4, 2});
  CHECK(value(m, "b").type.static_dims() == std::vector<int64_t>{4, 2});
  CHECK(value(m, "c").type.static_dims() == std::vector<int64_t>{2, 2});
  CHECK_FALSE(only_node(m, "Split").attr("num_outputs"));
}

TEST_CASE("opset adapter: Pad's axes spread its pads over every axis, and the numbers are Pad's", "[opsets]") {
  ModelBuilder mb = one_op("Pad", 18, {"pads", "", "axes"});
  add_initializer(mb.graph(), tensor_i64("pads", {2}, {1, 2}));
  add_initializer(mb.graph(), tensor_i64("axes", {1}, {-1}));
  const std::string path = (std::filesystem::temp_directory_path() / "memplan_pad18.onnx").string();
  std::ofstream(path, std::ios::binary) << mb.bytes();
  auto model = CompiledModel::compile(path, {});
  Session s(model, SessionOptions{true});
  const std::vector<float> x = random_floats(24, 3);
  s.set_input("x", kFloat32, std::vector<int64_t>{2, 3, 4}, x.data(), x.size() * 4);
  s.run();
  const TensorRef y = s.output("y");
  REQUIRE(std::vector<int64_t>(y.shape.begin(), y.shape.end()) == std::vector<int64_t>{2, 3, 7});
  const float* p = static_cast<const float*>(y.data);
  for (int r = 0; r < 6; ++r)
    for (int c = 0; c < 7; ++c) CHECK(p[r * 7 + c] == (c >= 1 && c < 5 ? x[static_cast<size_t>(r * 4 + c - 1)] : 0.f));
}

TEST_CASE("opset adapter: new ops it has no kernel for are refused naming op, version and node", "[opsets]") {
  CHECK_THAT(refusal(one_op("StringSplit", 20, {})), Catch::Contains("StringSplit-20"));
  CHECK_THAT(refusal(one_op("RegexFullMatch", 20, {})), Catch::Contains("RegexFullMatch-20"));
}

TEST_CASE("opset adapter: blocked QuantizeLinear and DequantizeLinear (block_size) run as the arithmetic they stand "
          "for, a last block shorter", "[opsets]") {
  // x [2, 5], axis 1, blocks of 2: scale and zero point [2, 3], the third block one element.
  ModelBuilder mb("blocked", 21, 10);
  auto& g = mb.graph();
  add_input(g, "x", elem::kFloat, {2, 5});
  const std::vector<float> scale{0.5f, 0.25f, 2.f, 1.f, 0.1f, 4.f};
  const std::vector<int8_t> zero{0, -3, 5, 10, -128, 127};
  add_initializer(g, tensor_f32("scale", {2, 3}, scale));
  add_initializer(g, raw_tensor("zero", elem::kInt8, {2, 3}, zero));
  auto* q = add_node(g, "QuantizeLinear", {"x", "scale", "zero"}, {"q"}, "q");
  attr_int(q, "axis", 1);
  attr_int(q, "block_size", 2);
  auto* dq = add_node(g, "DequantizeLinear", {"q", "scale", "zero"}, {"y"}, "dq");
  attr_int(dq, "axis", 1);
  attr_int(dq, "block_size", 2);
  g.add_output()->set_name("q");
  g.add_output()->set_name("y");
  const std::string path = (std::filesystem::temp_directory_path() / "memplan_blocked_qdq.onnx").string();
  std::ofstream(path, std::ios::binary) << mb.bytes();
  auto model = CompiledModel::compile(path, {});
  Session s(model, SessionOptions{true});
  // Ties (1.25 / 0.5 = 2.5 rounds to 2, 0.375 / 0.25 = 1.5 to 2), values that saturate (1000,
  // -1000), and a block of one element at the end of each row.
  const std::vector<float> x{1.25f, -0.75f, 0.375f, 1000.f, 3.f, 2.5f, -1.5f, 0.05f, -1000.f, 6.f};
  s.set_input("x", kFloat32, std::vector<int64_t>{2, 5}, x.data(), x.size() * 4);
  s.run();
  const auto* got_q = static_cast<const int8_t*>(s.output("q").data);
  const auto* got_y = static_cast<const float*>(s.output("y").data);
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 5; ++c) {
      const size_t i = static_cast<size_t>(r * 5 + c), b = static_cast<size_t>(r * 3 + c / 2);
      const float want_q = std::clamp(std::nearbyint(x[i] / scale[b]) + zero[b], -128.f, 127.f);
      INFO("row " << r << ", column " << c);
      CHECK(got_q[i] == static_cast<int8_t>(want_q));
      CHECK(got_y[i] == (want_q - zero[b]) * scale[b]);
    }
  CHECK(got_q[3] == 127);   // 1000 / 0.25 saturates
  CHECK(got_q[8] == -128);  // -1000 / 4 - 128 saturates
  CHECK(got_q[0] == 2);     // 2.5 rounds to even

  SECTION("a scale whose blocked axis does not match is refused naming it") {
    ModelBuilder bad("blocked", 21, 10);
    add_input(bad.graph(), "x", elem::kFloat, {2, 5});
    add_initializer(bad.graph(), tensor_f32("scale", {2, 2}, {1.f, 1.f, 1.f, 1.f}));
    auto* n = add_node(bad.graph(), "DequantizeLinear", {"x", "scale"}, {"y"}, "node");
    attr_int(n, "axis", 1);
    attr_int(n, "block_size", 2);
    bad.graph().add_output()->set_name("y");
    CHECK_THAT(refusal(bad), Catch::Contains("DequantizeLinear-21") && Catch::Contains("'scale' has shape [2, 2]") &&
                                 Catch::Contains("needs 3"));
  }
}

TEST_CASE("Attention-23 with a key/value cache returns past then current rows as present_key and present_value, and "
          "refuses what it does not run", "[opsets]") {
  // Q, K, V [1, 1, 2, 2] (one head, two new positions), past_key/past_value [1, 1, 1, 2].
  ModelBuilder mb("kv", 23, 11);
  auto& g = mb.graph();
  for (const char* in : {"Q", "K", "V"}) add_input(g, in, elem::kFloat, {1, 1, 2, 2});
  for (const char* in : {"past_key", "past_value"}) add_input(g, in, elem::kFloat, {1, 1, 1, 2});
  attr_int(add_node(g, "Attention", {"Q", "K", "V", "", "past_key", "past_value"}, {"Y", "present_key", "present_value"}, "attn"),
           "is_causal", 1);
  for (const char* out : {"Y", "present_key", "present_value"}) g.add_output()->set_name(out);
  const std::string path = (std::filesystem::temp_directory_path() / "memplan_attention_kv.onnx").string();
  std::ofstream(path, std::ios::binary) << mb.bytes();
  auto model = CompiledModel::compile(path, {});
  Session s(model, SessionOptions{true});
  const std::vector<float> q{0, 0, 0, 0}, k{3, 4, 5, 6}, v{10, 20, 30, 40}, pk{1, 2}, pv{7, 8};
  for (const auto& [name, data, rows] : {std::tuple{"Q", &q, 2}, {"K", &k, 2}, {"V", &v, 2}, {"past_key", &pk, 1},
                                         {"past_value", &pv, 1}})
    s.set_input(name, kFloat32, std::vector<int64_t>{1, 1, rows, 2}, data->data(), data->size() * 4);
  s.run();
  const auto values = [&](const char* name) {
    const TensorRef t = s.output(name);
    const float* p = static_cast<const float*>(t.data);
    return std::vector<float>(p, p + t.bytes / 4);
  };
  CHECK(values("present_key") == std::vector<float>{1, 2, 3, 4, 5, 6});
  CHECK(values("present_value") == std::vector<float>{7, 8, 10, 20, 30, 40});
  // Zero queries weigh every visible key alike: query 0 sees the cached key and its own (causal,
  // after the cache), query 1 all three.
  const std::vector<float> y = values("Y");
  CHECK(y[0] == Approx((7 + 10) / 2.f));
  CHECK(y[1] == Approx((8 + 20) / 2.f));
  CHECK(y[2] == Approx((7 + 10 + 30) / 3.f));
  CHECK(y[3] == Approx((8 + 20 + 40) / 3.f));

  ModelBuilder half("kv", 23, 11);
  for (const char* in : {"Q", "K", "V", "past_key"}) add_input(half.graph(), in, elem::kFloat, {1, 1, 2, 2});
  add_node(half.graph(), "Attention", {"Q", "K", "V", "", "past_key"}, {"Y", "present_key"}, "attn");
  for (const char* out : {"Y", "present_key"}) half.graph().add_output()->set_name(out);
  const std::string half_path = (std::filesystem::temp_directory_path() / "memplan_attention_half_kv.onnx").string();
  std::ofstream(half_path, std::ios::binary) << half.bytes();
  CHECK_THROWS_WITH(CompiledModel::compile(half_path, {}), Catch::Contains("past_key and past_value come together"));

  ModelBuilder scores("kv", 23, 11);
  for (const char* in : {"Q", "K", "V"}) add_input(scores.graph(), in, elem::kFloat, {1, 1, 2, 2});
  add_node(scores.graph(), "Attention", {"Q", "K", "V"}, {"Y", "", "", "qk"}, "attn");
  for (const char* out : {"Y", "qk"}) scores.graph().add_output()->set_name(out);
  CHECK_THAT(refusal(scores), Catch::Contains("qk_matmul_output"));
}

TEST_CASE("opset adapter: Resize-18's keep_aspect_ratio_policy rounds the output size and resamples by its one scale",
          "[opsets]") {
  // x [1, 1, 4, 6] to at most [3, 5] (not_larger): scale min(3/4, 5/6) = 0.75, so 4 -> 3 and
  // 6 * 0.75 = 4.5 -> 5 (rounded, where version 13's scales would floor it to 4).
  ModelBuilder mb("policy", 18, 8);
  auto& g = mb.graph();
  add_input(g, "x", elem::kFloat, {1, 1, 4, 6});
  add_initializer(g, tensor_i64("sizes", {2}, {3, 5}));
  auto* r = add_node(g, "Resize", {"x", "", "", "sizes"}, {"y"}, "resize");
  attr_ints(r, "axes", {2, 3});
  add_attr(r, "keep_aspect_ratio_policy", onnx::AttributeProto::STRING)->set_s("not_larger");
  g.add_output()->set_name("y");
  Model m = mb.import("policy.onnx");
  prepare_model(m, {});
  CHECK(value(m, "y").type.static_dims() == std::vector<int64_t>{1, 1, 3, 5});

  const std::string path = (std::filesystem::temp_directory_path() / "memplan_resize_policy.onnx").string();
  std::ofstream(path, std::ios::binary) << mb.bytes();
  auto model = CompiledModel::compile(path, {});
  Session s(model, SessionOptions{true});
  std::vector<float> x(24);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
  s.set_input("x", kFloat32, std::vector<int64_t>{1, 1, 4, 6}, x.data(), x.size() * 4);
  s.run();
  const TensorRef y = s.output("y");
  REQUIRE(std::vector<int64_t>(y.shape.begin(), y.shape.end()) == std::vector<int64_t>{1, 1, 3, 5});
  // Nearest, half_pixel, round_prefer_floor at (o + 0.5) / 0.75 - 0.5: rows 0, 1, 3; columns 0, 1, 3, 4, 5.
  const int rows[] = {0, 1, 3}, cols[] = {0, 1, 3, 4, 5};
  const float* p = static_cast<const float*>(y.data);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 5; ++j) CHECK(p[i * 5 + j] == x[static_cast<size_t>(rows[i] * 6 + cols[j])]);
}

TEST_CASE("opset adapter: Resize-18's keep_aspect_ratio_policy refuses sizes that are not positive or overflow a dim",
          "[opsets]") {
  // Found by fuzz_onnx: a size far larger than the input made the other axis's rounded size
  // overflow int64 (undefined behaviour) instead of being refused.
  auto refused_with = [](const Shape& in, std::vector<int64_t> sizes, const char* policy) {
    ModelBuilder mb("policy", 18, 8);
    auto& g = mb.graph();
    add_input(g, "x", elem::kFloat, in);
    add_initializer(g, tensor_i64("sizes", {2}, sizes));
    auto* r = add_node(g, "Resize", {"x", "", "", "sizes"}, {"y"}, "resize");
    attr_ints(r, "axes", {2, 3});
    add_attr(r, "keep_aspect_ratio_policy", onnx::AttributeProto::STRING)->set_s(policy);
    g.add_output()->set_name("y");
    return refusal(mb);
  };
  CHECK_THAT(refused_with({1, 1, 4, 6}, {3, 0}, "not_larger"), Catch::Contains("positive sizes"));
  CHECK_THAT(refused_with({1, 1, 4, 6}, {-3, 5}, "not_smaller"), Catch::Contains("positive sizes"));
  CHECK_THAT(refused_with({1, 1, 1, 6}, {1, 4611686018427387904}, "not_smaller"), Catch::Contains("too large"));
}
