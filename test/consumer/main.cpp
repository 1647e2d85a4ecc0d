// Built against an installed memplan (test/consumer/CMakeLists.txt): compiles a model folder's
// model.onnx, runs it on test_data_set_0/inputs/x.npy and checks the output against
// test_data_set_0/expected/<output>.npy. Only the public header is available here.
//
//   memplan_consumer MODEL_DIR      (models/tiny_mlp: one float32 input, one float32 output)
#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include <memplan/memplan.h>

namespace {

// The float32 payload of a little-endian C-order .npy file holding `count` elements: its last bytes.
std::vector<float> read_floats(const std::string& path, uint64_t count) {
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.rfind("\x93NUMPY", 0) != 0 || bytes.size() < count * sizeof(float))
    throw std::runtime_error(path + ": not an .npy file of " + std::to_string(count) + " floats");
  std::vector<float> out(count);
  std::memcpy(out.data(), bytes.data() + bytes.size() - count * sizeof(float), count * sizeof(float));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: memplan_consumer MODEL_DIR\n";
    return 1;
  }
  const std::string dir = argv[1];
  try {
    auto model = memplan::CompiledModel::compile(dir + "/model.onnx", {});
    const memplan::TensorInfo& in = model->inputs().at(0);
    const memplan::TensorInfo& out = model->outputs().at(0);
    if (in.dtype != memplan::kFloat32 || out.dtype != memplan::kFloat32) throw std::runtime_error("float32 only");
    const std::vector<float> x = read_floats(dir + "/test_data_set_0/inputs/" + in.name + ".npy",
                                             in.capacity_bytes / sizeof(float));
    memplan::Session session(model);
    session.set_input(in.name, memplan::kFloat32, in.shape, x.data(), x.size() * sizeof(float));
    session.run();
    const memplan::TensorRef y = session.output(out.name);
    const auto* got = static_cast<const float*>(y.data);
    const uint64_t n = y.bytes / sizeof(float);
    const std::vector<float> want = read_floats(dir + "/test_data_set_0/expected/" + out.name + ".npy", n);
    for (uint64_t i = 0; i < n; ++i)
      if (!(std::abs(got[i] - want[i]) <= 1e-4 + 1e-3 * std::abs(want[i]))) {
        std::cerr << out.name << "[" << i << "] = " << got[i] << ", expected " << want[i] << "\n";
        return 1;
      }
    std::cout << "memplan " << MEMPLAN_VERSION << ": " << dir << ": " << out.name << "[0] = " << got[0]
              << " as expected (" << n << " values), arena " << model->arena_bytes() << " bytes\n";
  } catch (const memplan::Error& e) {
    std::cerr << "memplan error (kind " << static_cast<int>(e.kind()) << "): " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
