// The kernel interface: one object per node, made once when a model is loaded (weights reordered,
// oneDNN primitives created), run once per inference on views of arena memory.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "ir/dtype.h"
#include "ir/graph.h"

struct dnnl_stream;  // oneDNN's C stream handle (dnnl_types.h)

namespace memplan::rt {

constexpr int kMaxRank = 8;

// A tensor at run time: a pointer into the arena (or the weights, or a user buffer) and its
// current shape. Plain data, no heap: inferences must not allocate.
struct TensorView {
  std::byte* data = nullptr;  // null for an omitted optional input or output
  DType dtype = DType::Undefined;
  int rank = 0;
  std::array<int64_t, kMaxRank> dims{};
  uint64_t capacity = 0;  // bytes available at `data`

  uint64_t element_count() const {
    uint64_t n = 1;
    for (int i = 0; i < rank; ++i) n *= static_cast<uint64_t>(dims[i]);
    return n;
  }
  uint64_t byte_size() const { return element_count() * dtype_size(dtype); }
  template <typename T>
  T* as() const { return reinterpret_cast<T*>(data); }
  std::span<const int64_t> shape() const { return {dims.data(), static_cast<size_t>(rank)}; }
};

// A scalar int32 or int64 (a trip count, a position) as int64.
inline int64_t scalar_int(const TensorView& v) {
  if (v.dtype == DType::Int32) {
    int32_t x;
    std::memcpy(&x, v.data, 4);
    return x;
  }
  int64_t x;
  std::memcpy(&x, v.data, 8);
  return x;
}

// What a kernel changes while it runs (oneDNN memory objects re-pointed at this run's tensors,
// their argument arrays), one per kernel and session, made with the session. Kernels themselves
// are shared by every session of a compiled model and stay as they were made, so sessions run
// concurrently without a lock.
class KernelState {
 public:
  virtual ~KernelState() = default;
};

struct KernelArgs {
  std::span<const TensorView> inputs;
  // Each output's `data` is its planned buffer and `dims` its compile-time shape; a kernel whose
  // output shape depends on run-time values sets `rank`/`dims` (never past `capacity`).
  std::span<TensorView> outputs;
  std::byte* scratchpad = nullptr;  // scratchpad_bytes() bytes inside the arena, 64-byte aligned
  KernelState* state = nullptr;     // what make_state() made for this session (null if it made none)
  dnnl_stream* stream = nullptr;    // the session's oneDNN stream (null: the kernel's own, one caller at a time)
};

class Kernel;

// The next variant in a kernel's chain of leaner ones (Kernel::take_leaner): made already, or
// made when taken, so that a variant with weights of its own costs memory only once chosen.
class LeanerVariant {
 public:
  using Factory = std::function<std::unique_ptr<Kernel>()>;
  void set(std::unique_ptr<Kernel> k);
  void set(Factory make) { make_ = std::move(make); }
  std::unique_ptr<Kernel> take();
  const Kernel* made() const { return made_.get(); }  // null for none, or one a factory makes
  void clear() {
    made_.reset();
    make_ = nullptr;
  }

 private:
  std::unique_ptr<Kernel> made_;
  Factory make_;
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  // Must not allocate heap memory; throws memplan::Error on bad data (e.g. an index out of range).
  // Must not change the kernel either: sessions call it concurrently. What a run needs to write
  // lives in args.state.
  virtual void run(const KernelArgs& args) = 0;
  // The per-session state run() needs (null for a kernel that needs none). Called when a session
  // is made, from any thread; allocating here is fine.
  virtual std::unique_ptr<KernelState> make_state() const { return nullptr; }
  // Temporary memory the planner reserves for this node for the duration of its step.
  virtual uint64_t scratchpad_bytes() const { return 0; }
  // Whether run() reads input i through its view. A kernel that copied a constant input at load
  // (oneDNN weights, reordered) says no, and the model then keeps no other copy of it.
  virtual bool reads_at_run_time(size_t /*input*/) const { return true; }
  // Storage groups (plan/storage_groups.h). A view: output 0 is input view_of()'s bytes
  // unchanged, and given the same buffer run() writes nothing. -1: not a view.
  virtual int view_of() const { return -1; }
  // run() reads each element of `input` before writing the same element of output 0 (and reads
  // nothing of it after), so the planner may give both one buffer when the input dies here.
  virtual bool may_overwrite_input(size_t /*input*/) const { return false; }
  // Output 0 is the inputs' bytes end to end (a Concat whose outer dims are 1): inputs already in
  // their places there are not copied, so their producers may write them straight in.
  virtual bool concatenates_end_to_end() const { return false; }
  // What runs the node, for the report and the profile: oneDNN's implementation name for each
  // primitive it runs (impl_info_str(): "brgconv:avx512_core", "ref:any", ...), or memplan's own
  // loop's name. A "ref:" among them is oneDNN's reference kernel (plan/plan.h's
  // is_reference_implementation).
  virtual std::string implementation() const { return "memplan"; }
  // How many times as long as oneDNN's fastest kernel for the node this one is expected to take,
  // at least, known before it runs: compile-time kernel choice (pipeline/lean_kernels) never runs
  // a candidate whose estimate cannot win or does not fit the time left to choose. 1: oneDNN's
  // own work, cut differently (bands of rows, chunks of channels); more for memplan's plain loops.
  virtual double expected_slowdown() const { return 1; }
  // run() reorders an input into a layout of its own and its output back out of one (oneDNN's
  // blocked kernel between neighbours in plain layouts): its leaner variant, on the plain tensors,
  // can be the faster of the two, and compile-time kernel choice times it for speed too
  // (pipeline/lean_kernels' choose_faster_variants).
  virtual bool reorders_both_ways() const { return false; }
  // Chosen for speed at a cost in memory (Winograd's convolutions): unless speed is preferred,
  // it gives way to its leaner variant wherever its scratchpad would set the arena's peak, however
  // much slower the variant is (pipeline/lean_kernels).
  virtual bool gives_way_for_memory() const { return false; }
  // A variant of this kernel for the same node that needs less scratchpad (and may be slower);
  // null when there is none. Taken once.
  std::unique_ptr<Kernel> take_leaner() { return leaner_.take(); }
  // Made at load while the weights are at hand, or made when taken (a factory holding them).
  void set_leaner(std::unique_ptr<Kernel> k) { leaner_.set(std::move(k)); }
  void set_leaner(LeanerVariant::Factory make) { leaner_.set(std::move(make)); }
  // Whether a leaner variant made already (one down the chain) reads input i at run time: the
  // constant must outlive the choice of variant. (A factory holds what its variant reads.)
  bool leaner_reads_at_run_time(size_t input) const {
    for (const Kernel* k = leaner_.made(); k; k = k->leaner_.made())
      if (k->reads_at_run_time(input)) return true;
    return false;
  }
  // Once the variants are chosen: the rest of the chain, and what it holds, is freed.
  void drop_leaner() { leaner_.clear(); }

 private:
  LeanerVariant leaner_;
};

inline void LeanerVariant::set(std::unique_ptr<Kernel> k) { made_ = std::move(k); }

inline std::unique_ptr<Kernel> LeanerVariant::take() {
  if (made_) return std::move(made_);
  if (!make_) return nullptr;
  Factory make = std::move(make_);
  make_ = nullptr;
  return make();
}

// Builds a kernel's chain of leaner variants, leanest last: after kernel k, or (default-made) a
// chain of its own, whose first variant take_head() gives (a factory's for set_leaner).
class LeanerChain {
 public:
  LeanerChain() = default;
  explicit LeanerChain(Kernel& k) : tail_(&k) {}
  void append(std::unique_ptr<Kernel> next) {
    if (!next) return;
    Kernel* t = next.get();
    if (tail_) tail_->set_leaner(std::move(next));
    else head_ = std::move(next);
    tail_ = t;
  }
  // A variant made when taken: nothing can follow it. At the head of a chain of its own, there
  // is nothing to defer: it is made now.
  void append_last(LeanerVariant::Factory make) {
    if (tail_) tail_->set_leaner(std::move(make));
    else head_ = make();
  }
  std::unique_ptr<Kernel> take_head() { return std::move(head_); }

 private:
  Kernel* tail_ = nullptr;
  std::unique_ptr<Kernel> head_;
};

struct DnnlContext;  // oneDNN engine and stream (runtime/dnnl_context.h)

struct KernelEnv {
  DnnlContext* dnnl = nullptr;
  std::string file;  // model path, for messages
};

// Makes the kernel for `node`, whose inputs and outputs have static compile-time types (or
// capacities, where `shape_varies`), and whose constant inputs (weights) are `node.inputs[i]->constant`.
// Returns null if this factory does not handle the node's types/attributes (then the
// registry reports the node as unsupported); throws memplan::Error for invalid attributes.
using KernelFactory = std::unique_ptr<Kernel> (*)(const Node& node, const KernelEnv& env);

}  // namespace memplan::rt
