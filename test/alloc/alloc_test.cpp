// Proves that an inference after the first allocates nothing in memplan: this binary replaces
// malloc, calloc, realloc and operator new for the whole process and counts the calls made during
// run(), attributing each to the shared object that made it. oneDNN 2.6 builds a small argument
// map inside every primitive execution, which no caller can avoid: those are counted and printed,
// and must stay a fixed number per run; everything else must be zero.
#include <dlfcn.h>
#include <malloc.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include <oneapi/dnnl/dnnl.h>

#include <fstream>

#include "io/npy.h"
#include "memplan/memplan.h"
#include "onnx/onnx_pb.h"
#include "onnx/tensor_proto.h"

extern "C" void* __libc_malloc(size_t);
extern "C" void* __libc_calloc(size_t, size_t);
extern "C" void* __libc_realloc(void*, size_t);

namespace {
std::atomic<bool> counting{false};
std::atomic<long> ours{0}, onednn{0};
void* dnnl_base = nullptr;  // load address of libdnnl, to tell its allocations apart

__attribute__((noinline)) void note(void* caller) {
  if (!counting.load(std::memory_order_relaxed)) return;
  counting = false;  // dladdr may allocate
  Dl_info info{};
  const bool in_dnnl = dladdr(caller, &info) != 0 && info.dli_fbase == dnnl_base;
  (in_dnnl ? onednn : ours).fetch_add(1, std::memory_order_relaxed);
  if (!in_dnnl && std::getenv("MEMPLAN_ALLOC_TRACE"))
    std::fprintf(stderr, "allocation from %s +%#lx (%s)\n", info.dli_fname ? info.dli_fname : "?", (unsigned long)((char*)caller - (char*)info.dli_fbase),
                 info.dli_sname ? info.dli_sname : "?");
  counting = true;
}
}  // namespace

#define NOTE() note(__builtin_return_address(0))
extern "C" void* malloc(size_t n) {
  NOTE();
  return __libc_malloc(n);
}
extern "C" void* calloc(size_t a, size_t b) {
  NOTE();
  return __libc_calloc(a, b);
}
extern "C" void* realloc(void* p, size_t n) {
  NOTE();
  return __libc_realloc(p, n);
}
void* operator new(size_t n) {
  NOTE();
  if (void* p = __libc_malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t n) {
  NOTE();
  if (void* p = __libc_malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }

int main() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&dnnl_stream_wait), &info)) dnnl_base = info.dli_fbase;
  const std::string models = std::string(MEMPLAN_SOURCE_DIR) + "/models/";
  struct Case {
    std::string model;  // a folder of models/
  };
  // Data sets as .npy files (test_data_set_0/inputs/NAME.npy), or as ONNX's input_N.pb (the
  // converter patterns and the opset 18-23 models, whose own kernels run here: channel shuffle,
  // RotaryEmbedding, Attention, Col2Im, AffineGrid, the normalizations).
  const std::vector<Case> cases = {{"tiny_mlp"},          {"example"},  {"loop_scan_outputs"},
                                   {"nested_if_loop_if"}, {"scan_sum"}, {"loop_data_dependent_exit"},
                                   {"loop_growing_state"}, {"patterns/channel_shuffle"}, {"patterns/mediapipe_block"},
                                   {"opsets/rotary_23"},   {"opsets/attention_23"},      {"opsets/affinegrid_20"},
                                   {"opsets/col2im_18"},   {"opsets/groupnorm_21"},      {"opsets/rmsnorm_23"},
                                   {"opsets/gelu_20"},     {"opsets/bitwise_18"},        {"opsets/control_flow_21"},
                                   {"torch_dynamic/scripted_list_ops"}};  // a Loop carrying a sequence
  int failed = 0, passed = 0;
  for (const Case& c : cases) {
    const std::string path = models + c.model + "/model.onnx";
    auto model = memplan::CompiledModel::compile(path, {});
    memplan::Session session(model);
    // The model's own first data set (zeros could keep a data-dependent loop going forever).
    std::vector<std::vector<std::byte>> data;
    const std::string set = models + c.model + "/test_data_set_0/";
    for (size_t i = 0; i < model->inputs().size(); ++i) {
      const std::string npy = set + "inputs/" + model->inputs()[i].name + ".npy";
      if (std::filesystem::exists(npy)) {
        data.push_back(memplan::io::read_npy(npy).data);
        continue;
      }
      const std::string pb = set + "input_" + std::to_string(i) + ".pb";
      std::ifstream in(pb, std::ios::binary);
      onnx::TensorProto proto;
      if (!proto.ParseFromIstream(&in)) {
        std::fprintf(stderr, "%s: no data set\n", pb.c_str());
        return 1;
      }
      data.push_back(memplan::tensor_from_proto(proto, set, pb).materialize());
    }
    auto set_inputs = [&] {
      for (size_t i = 0; i < data.size(); ++i) {
        const auto& in = model->inputs()[i];
        session.set_input(in.name, in.dtype, in.shape, data[i].data(), data[i].size());
      }
    };
    set_inputs();
    session.run();  // the first run may warm up (oneDNN's JIT, thread pool)
    // A session of several threads reads the machine's load when a window of it is over
    // (runtime/free_cores.h): the counted runs come after one, so they read it too.
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    ours = 0;
    onednn = 0;
    counting = true;
    for (int r = 0; r < 2; ++r) {
      set_inputs();
      session.run();
    }
    counting = false;
    const long n = ours.load(), d = onednn.load();
    std::printf("%-26s memplan: %ld allocations, oneDNN internals: %ld, in 2 runs after the first\n",
                c.model.c_str(), n, d);
    (n == 0 ? passed : failed)++;
  }
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
