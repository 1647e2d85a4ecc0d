// The README's example: compile a model, run it in a session, read an output.
// Usage: memplan_example MODEL.onnx   (feeds 0.5 to every float input, 1 to every other input)
#include <cstdio>
#include <vector>

#include "memplan/memplan.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s MODEL.onnx\n", argv[0]);
    return 1;
  }
  try {
    auto model = memplan::CompiledModel::compile(argv[1], {});
    std::printf("arena: %llu bytes\n", static_cast<unsigned long long>(model->arena_bytes()));
    memplan::Session session(model);
    for (const memplan::TensorInfo& in : model->inputs()) {
      std::vector<unsigned char> bytes(in.capacity_bytes, 1);
      if (in.dtype == memplan::kFloat32) {
        std::vector<float> halves(in.capacity_bytes / sizeof(float), 0.5f);
        session.set_input(in.name, in.dtype, in.shape, halves.data(), in.capacity_bytes);
      } else {
        session.set_input(in.name, in.dtype, in.shape, bytes.data(), bytes.size());
      }
    }
    session.run();
    for (const memplan::TensorInfo& out : model->outputs()) {
      memplan::TensorRef y = session.output(out.name);
      std::printf("%s: %zu dims, %llu bytes", out.name.c_str(), y.shape.size(), static_cast<unsigned long long>(y.bytes));
      if (y.dtype == memplan::kFloat32 && y.bytes >= sizeof(float))
        std::printf(", first value %g", static_cast<const float*>(y.data)[0]);
      std::printf("\n");
    }
  } catch (const memplan::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
  return 0;
}
