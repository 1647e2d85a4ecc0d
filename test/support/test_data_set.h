// ONNX test data sets (a folder of input_N.pb and output_N.pb TensorProtos, as models/ keeps them)
// read as memplan tensors by name, for tests that run a model through the public API.
#pragma once

#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "ir/tensor.h"
#include "memplan/memplan.h"
#include "onnx/onnx_pb.h"
#include "onnx/tensor_proto.h"
#include "support/numeric.h"

namespace memplan::test {

inline onnx::TensorProto read_tensor_proto(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  onnx::TensorProto proto;
  REQUIRE(proto.ParseFromIstream(&in));
  return proto;
}

inline Tensor read_pb(const std::filesystem::path& path) {
  return tensor_from_proto(read_tensor_proto(path), path.parent_path(), path.string());
}

inline std::string pb_name(const std::filesystem::path& path) { return read_tensor_proto(path).name(); }

struct DataSet {
  std::vector<std::pair<std::string, Tensor>> inputs;
  std::vector<std::pair<std::string, Tensor>> outputs;
};

// input_0.pb, input_1.pb, ... and output_0.pb, ... until the first missing one.
inline DataSet read_data_set(const std::filesystem::path& dir) {
  DataSet d;
  for (const char* kind : {"input_", "output_"})
    for (int i = 0;; ++i) {
      const std::filesystem::path p = dir / (kind + std::to_string(i) + ".pb");
      if (!std::filesystem::exists(p)) break;
      (kind[0] == 'i' ? d.inputs : d.outputs).emplace_back(pb_name(p), read_pb(p));
    }
  return d;
}

// Copies the data set's inputs into the session.
inline void set_inputs(Session& session, const DataSet& d) {
  for (const auto& [name, t] : d.inputs) {
    const auto bytes = t.materialize();
    session.set_input(name, static_cast<int32_t>(t.dtype), t.dims, bytes.data(), bytes.size());
  }
}

// The session's outputs (float32) against the data set's, shape and values.
inline void require_outputs_close(const Session& session, const DataSet& d, const Tolerance& tol) {
  for (const auto& [name, want] : d.outputs) {
    INFO(name);
    const TensorRef got = session.output(name);
    REQUIRE(std::vector<int64_t>(got.shape.begin(), got.shape.end()) == want.dims);
    REQUIRE(got.bytes == want.element_count() * sizeof(float));
    std::vector<float> g(want.element_count()), w(want.element_count());
    std::memcpy(g.data(), got.data, got.bytes);
    for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(want.float_at(i));
    require_close(g, w, tol);
  }
}

}  // namespace memplan::test
