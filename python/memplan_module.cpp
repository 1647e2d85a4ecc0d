// memplan's Python module: compile an ONNX model and run it on numpy arrays, through the public C++
// API alone (include/memplan/memplan.h).
//
//   import memplan, numpy as np
//   m = memplan.compile("models/tiny_mlp/model.onnx", shapes={"x": [1, 64]})
//   out = m.run({"x": np.ones((1, 64), np.float32)})   # {"probs": array(...)}
//
// Inputs: a C-contiguous array in native byte order whose data is 64-byte aligned is bound
// zero-copy (Session::bind_input); any other array is copied once into the session's arena
// (Session::set_input), from a C-contiguous copy when it is not contiguous. memplan.aligned_empty()
// makes arrays that are always bound zero-copy.
// Outputs: by default each output is a new array that owns a copy (the arena is reused by the next
// run). run(..., copy=False) returns read-only views into the session's memory instead: no copy, each
// view keeps its session alive, and the next run of that session overwrites what it shows.
// The GIL is released while a model compiles and while a session runs; one session runs one call at
// a time, sessions of one model run at the same time on their own threads (as in C++).
// Errors: memplan::Error becomes memplan.Error (a RuntimeError) with the one-line message and
// `kind` (memplan.ErrorKind: InvalidInput, Unsupported, Verification, Internal).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "memplan/memplan.h"

namespace py = pybind11;
using memplan::Error;
using memplan::ErrorKind;

namespace {

constexpr uintptr_t kZeroCopyAlignment = 64;  // Session::bind_input's requirement

// ONNX element types (TensorProto.DataType) that numpy has.
struct ElementType {
  int32_t onnx;
  const char* numpy;
};
constexpr ElementType kElementTypes[] = {
    {1, "float32"}, {2, "uint8"},    {3, "int8"},     {4, "uint16"}, {5, "int16"},  {6, "int32"},
    {7, "int64"},   {9, "bool"},     {10, "float16"}, {11, "float64"}, {12, "uint32"}, {13, "uint64"},
};

py::dtype numpy_dtype(int32_t onnx, const std::string& what) {
  for (const ElementType& e : kElementTypes)
    if (e.onnx == onnx) return py::dtype(e.numpy);
  throw Error(ErrorKind::Unsupported,
              what + " has ONNX element type " + std::to_string(onnx) + ", which numpy has no dtype for");
}

py::object numpy_dtype_or_none(int32_t onnx) {
  for (const ElementType& e : kElementTypes)
    if (e.onnx == onnx) return py::dtype(e.numpy);
  return py::none();
}

int32_t onnx_type(const py::dtype& dt, const std::string& what) {
  const char kind = dt.kind();
  const auto size = dt.itemsize();
  auto is = [&](char k, py::ssize_t s) { return kind == k && size == s; };
  if (is('f', 4)) return 1;
  if (is('u', 1)) return 2;
  if (is('i', 1)) return 3;
  if (is('u', 2)) return 4;
  if (is('i', 2)) return 5;
  if (is('i', 4)) return 6;
  if (is('i', 8)) return 7;
  if (is('b', 1)) return 9;
  if (is('f', 2)) return 10;
  if (is('f', 8)) return 11;
  if (is('u', 4)) return 12;
  if (is('u', 8)) return 13;
  throw Error(ErrorKind::InvalidInput,
              what + ": numpy dtype " + py::str(static_cast<const py::handle&>(dt)).cast<std::string>() +
                  " has no ONNX element type memplan takes");
}

// One input of a run, ready to hand to the session without the GIL.
struct Feed {
  std::string name;
  py::array array;  // C-contiguous, native byte order; owns or references the data
  int32_t dtype = 0;
  std::vector<int64_t> shape;
  bool zero_copy = false;
  // A sequence input (a list or tuple of arrays: `elements`, copied in), or an optional input that
  // holds nothing (None).
  bool sequence = false, none = false;
  std::vector<struct Feed> elements;
};

Feed make_feed(const std::string& name, const py::handle& value) {
  Feed f;
  f.name = name;
  if (value.is_none()) {
    f.none = true;
    return f;
  }
  if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
    // A list of arrays is a sequence: a list of numbers (a 1-D tensor) is not.
    const py::sequence items = py::reinterpret_borrow<py::sequence>(value);
    const bool of_arrays = items.size() == 0 || py::isinstance<py::array>(items[0]);
    if (of_arrays) {
      f.sequence = true;
      for (size_t k = 0; k < items.size(); ++k) {
        Feed e = make_feed(name + "[" + std::to_string(k) + "]", items[k]);
        if (e.sequence || e.none) throw Error(ErrorKind::InvalidInput, "input '" + name + "': a sequence holds tensors only");
        e.zero_copy = false;  // copied into the session's list
        f.elements.push_back(std::move(e));
      }
      return f;
    }
  }
  const std::string what = "input '" + name + "'";
  py::array a = py::array::ensure(value);
  if (!a) throw Error(ErrorKind::InvalidInput, what + ": not a numpy array (nor convertible to one)");
  bool copied = !py::isinstance<py::array>(value);  // a list, a scalar: numpy made the array
  if (!a.dtype().attr("isnative").cast<bool>()) {
    a = a.attr("astype")(a.dtype().attr("newbyteorder")("="));
    copied = true;
  }
  f.dtype = onnx_type(a.dtype(), what);
  if (!(a.flags() & py::array::c_style)) {
    a = py::array::ensure(a, py::array::c_style);  // a contiguous copy
    copied = true;
  }
  for (py::ssize_t d = 0; d < a.ndim(); ++d) f.shape.push_back(static_cast<int64_t>(a.shape(d)));
  // Our own copies go into the arena (set_input) and are dropped after the call; the caller's array,
  // when aligned, is read in place.
  f.zero_copy = !copied && a.nbytes() > 0 && reinterpret_cast<uintptr_t>(a.data()) % kZeroCopyAlignment == 0;
  f.array = std::move(a);
  return f;
}

py::tuple to_tuple(std::span<const int64_t> shape) {
  py::tuple t(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) t[i] = py::int_(shape[i]);
  return t;
}

class PySession;

// A compiled model: read-only, shared by its sessions. run() uses one internal session.
struct PyModel {
  std::shared_ptr<const memplan::CompiledModel> model;
  std::shared_ptr<PySession> session;  // made by the first Model.run
};

class PySession {
 public:
  PySession(std::shared_ptr<const memplan::CompiledModel> model, memplan::SessionOptions options)
      : model_(model), session_(std::make_unique<memplan::Session>(std::move(model), options)) {}

  const std::shared_ptr<const memplan::CompiledModel>& model() const { return model_; }

  // Called with the GIL held; releases it while the inputs are handed over and the model runs.
  py::dict run(const std::shared_ptr<PySession>& self, const py::dict& inputs, bool copy) {
    std::vector<Feed> feeds;
    feeds.reserve(inputs.size());
    for (const auto& [key, value] : inputs) {
      if (!py::isinstance<py::str>(key)) throw py::type_error("input names must be str");
      feeds.push_back(make_feed(key.cast<std::string>(), value));
      // An optional tensor is copied into the session's container, never read in place.
      for (const memplan::TensorInfo& info : model_->inputs())
        if (info.name == feeds.back().name && info.kind != memplan::ValueKind::Tensor) feeds.back().zero_copy = false;
    }
    py::dict result;
    py::gil_scoped_release nogil;
    std::lock_guard<std::mutex> lock(mutex_);  // never taken with the GIL held: no deadlock
    std::vector<char> applied(feeds.size(), 0);
    try {
      for (size_t i = 0; i < feeds.size(); ++i) {
        const Feed& f = feeds[i];
        if (f.none) {
          session_->set_input_none(f.name);
          applied[i] = 1;
          continue;
        }
        if (f.sequence) {
          std::vector<memplan::TensorRef> refs;
          for (const Feed& e : f.elements)
            refs.push_back({e.dtype, e.shape, e.array.data(), static_cast<uint64_t>(e.array.nbytes())});
          session_->set_input_sequence(f.name, refs);
          applied[i] = 1;
          continue;
        }
        const void* data = f.array.data();
        const auto bytes = static_cast<uint64_t>(f.array.nbytes());
        if (f.zero_copy) session_->bind_input(f.name, f.dtype, f.shape, data, bytes);
        else session_->set_input(f.name, f.dtype, f.shape, data, bytes);
        applied[i] = 1;
      }
      session_->run();
    } catch (...) {
      py::gil_scoped_acquire gil;
      keep_bound(feeds, applied);
      throw;
    }
    py::gil_scoped_acquire gil;
    keep_bound(feeds, applied);
    last_zero_copy_.clear();
    for (const Feed& f : feeds)
      if (f.zero_copy) last_zero_copy_.push_back(f.name);
    for (const memplan::TensorInfo& info : model_->outputs())
      result[py::str(info.name)] = output_value(self, info, copy);
    return result;
  }

  // Like every method here: the GIL is released before the session's mutex is taken (a run holds
  // the mutex while it takes the GIL back), so the two are never waited for in opposite orders.
  std::vector<std::string> zero_copy_inputs() const {
    py::gil_scoped_release nogil;
    std::lock_guard<std::mutex> lock(mutex_);
    return last_zero_copy_;
  }

  py::list profile() const {
    std::vector<memplan::NodeProfile> rows;
    {
      py::gil_scoped_release nogil;
      std::lock_guard<std::mutex> lock(mutex_);
      rows = session_->profile();
    }
    py::list out;
    for (const auto& r : rows) {
      py::dict d;
      d["node"] = r.node;
      d["op_type"] = r.op_type;
      d["graph"] = r.graph;
      d["calls"] = r.calls;
      d["self_ms"] = r.self_ms;
      out.append(d);
    }
    return out;
  }

  void reset_profile() {
    py::gil_scoped_release nogil;
    std::lock_guard<std::mutex> lock(mutex_);
    session_->reset_profile();
  }

  std::vector<uint64_t> runs_by_threads() const {
    py::gil_scoped_release nogil;
    std::lock_guard<std::mutex> lock(mutex_);
    return session_->runs_by_threads();
  }

  std::map<std::string, uint64_t> dynamic_tensors() const {
    py::gil_scoped_release nogil;
    std::lock_guard<std::mutex> lock(mutex_);
    std::map<std::string, uint64_t> out;
    for (const auto& d : session_->dynamic_tensors()) out[d.name] = d.max_bytes;
    return out;
  }

 private:
  // With the GIL and the session's mutex held, after a run (or a failed one): a zero-copy input stays
  // bound in the session until it is replaced, so its array is kept alive as long.
  void keep_bound(const std::vector<Feed>& feeds, const std::vector<char>& applied) {
    for (size_t i = 0; i < feeds.size(); ++i) {
      if (!applied[i]) continue;
      if (feeds[i].zero_copy) bound_[feeds[i].name] = feeds[i].array;
      else bound_.erase(feeds[i].name);
    }
  }

  // With the GIL and the session's mutex held: an array, a list of arrays (a sequence), or None (an
  // optional holding nothing).
  py::object output_value(const std::shared_ptr<PySession>& self, const memplan::TensorInfo& info, bool copy) {
    if (!session_->output_has_value(info.name)) return py::none();
    if (info.kind != memplan::ValueKind::Sequence && info.kind != memplan::ValueKind::OptionalSequence)
      return array_of(self, info.name, session_->output(info.name), copy);
    py::list items;
    for (const memplan::TensorRef& ref : session_->output_sequence(info.name))
      items.append(array_of(self, info.name, ref, copy));
    return items;
  }

  py::array array_of(const std::shared_ptr<PySession>& self, const std::string& name, const memplan::TensorRef& ref,
                     bool copy) {
    const py::dtype dt = numpy_dtype(ref.dtype, "output '" + name + "'");
    std::vector<py::ssize_t> shape(ref.shape.begin(), ref.shape.end());
    if (copy || ref.bytes == 0) {
      py::array a(dt, shape);
      if (static_cast<uint64_t>(a.nbytes()) != ref.bytes)
        throw Error(ErrorKind::Internal, "internal error: output '" + name + "' holds " + std::to_string(ref.bytes) +
                                             " bytes, its shape needs " + std::to_string(a.nbytes()));
      if (ref.bytes) std::memcpy(a.mutable_data(), ref.data, ref.bytes);
      return a;
    }
    py::array view(dt, shape, std::vector<py::ssize_t>{}, ref.data, py::cast(self));
    view.attr("setflags")(py::arg("write") = false);
    return view;
  }

  std::shared_ptr<const memplan::CompiledModel> model_;
  std::unique_ptr<memplan::Session> session_;
  mutable std::mutex mutex_;
  std::map<std::string, py::object> bound_;  // zero-copy inputs the session still points at
  std::vector<std::string> last_zero_copy_;
};

py::list tensor_infos(const std::vector<memplan::TensorInfo>& infos) {
  py::list out;
  for (const auto& t : infos) out.append(py::cast(t));
  return out;
}

using ShapeMap = std::map<std::string, std::vector<int64_t>>;

std::shared_ptr<PyModel> compile(const std::string& path, std::optional<ShapeMap> shapes,
                                 std::optional<std::map<std::string, int64_t>> dims, std::optional<ShapeMap> bounds,
                                 const std::string& strategy, bool static_only, uint64_t alignment, int threads,
                                 const std::string& prefer, bool external_inputs, uint64_t max_arena) {
  memplan::CompileOptions options;
  if (shapes) options.input_shapes = std::move(*shapes);
  if (dims) options.dims = std::move(*dims);
  if (bounds) options.bounds = std::move(*bounds);
  options.strategy = strategy;
  options.static_only = static_only;
  options.alignment = alignment;
  options.threads = threads;
  options.prefer = prefer;
  options.external_inputs = external_inputs;
  options.max_arena = max_arena;
  auto m = std::make_shared<PyModel>();
  py::gil_scoped_release nogil;
  m->model = memplan::CompiledModel::compile(path, options);
  return m;
}

std::shared_ptr<PyModel> load(const std::string& model_path, const std::string& plan_path, int threads) {
  auto m = std::make_shared<PyModel>();
  py::gil_scoped_release nogil;
  m->model = memplan::CompiledModel::load(model_path, plan_path, threads);
  return m;
}

py::array aligned_empty(const py::object& shape, const py::object& dtype) {
  const py::dtype dt = py::dtype::from_args(dtype);
  py::module_ np = py::module_::import("numpy");
  const py::tuple dims = py::isinstance<py::int_>(shape) ? py::make_tuple(shape) : py::tuple(shape);
  uint64_t elements = 1;
  for (const auto& d : dims) {
    const auto n = d.cast<int64_t>();
    if (n < 0) throw py::value_error("negative dimension in aligned_empty's shape");
    elements *= static_cast<uint64_t>(n);
  }
  const auto bytes = static_cast<py::ssize_t>(elements * static_cast<uint64_t>(dt.itemsize()));
  py::array raw = np.attr("empty")(bytes + static_cast<py::ssize_t>(kZeroCopyAlignment), "uint8");
  const auto address = reinterpret_cast<uintptr_t>(raw.data());
  const auto skip = static_cast<py::ssize_t>((kZeroCopyAlignment - address % kZeroCopyAlignment) % kZeroCopyAlignment);
  py::object slice = raw[py::slice(skip, skip + bytes, 1)];
  return slice.attr("view")(dt).attr("reshape")(dims);
}

}  // namespace

PYBIND11_MODULE(_memplan, m) {
  m.doc() =
      "memplan: compile an ONNX model into one preallocated arena and run it on numpy arrays.\n\n"
      "    m = memplan.compile('model.onnx', shapes={'x': [1, 64]})\n"
      "    out = m.run({'x': np.ones((1, 64), np.float32)})  # {output name: array}\n";
  m.attr("__version__") = MEMPLAN_VERSION;

  py::enum_<ErrorKind>(m, "ErrorKind", py::arithmetic(), "What went wrong; the value is the CLI's exit code.")
      .value("InvalidInput", ErrorKind::InvalidInput, "unreadable or malformed model, plan or input")
      .value("Unsupported", ErrorKind::Unsupported, "an op, opset, dtype or feature memplan does not implement")
      .value("Verification", ErrorKind::Verification, "a plan that overlaps, or a buffer clobbered at run time")
      .value("Internal", ErrorKind::Internal, "a broken invariant inside memplan (a bug)");

  // Never destroyed: the exception type must outlive every translation, up to interpreter exit.
  static auto* error = new py::exception<Error>(m, "Error", PyExc_RuntimeError);
  error->doc() = "memplan's error: str(e) is the one-line message, e.kind a memplan.ErrorKind.";
  error->attr("kind") = py::none();
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      // py::exception's own operator() raises with a plain message; call the type for an instance.
      py::object instance = py::handle(error->ptr())(py::str(e.what()));
      instance.attr("kind") = py::cast(e.kind());
      PyErr_SetObject(error->ptr(), instance.ptr());
    }
  });

  py::class_<memplan::TensorInfo>(m, "TensorInfo", "A model input or output as compiled.")
      .def_readonly("name", &memplan::TensorInfo::name)
      .def_readonly("elem_type", &memplan::TensorInfo::dtype, "ONNX's TensorProto.DataType number")
      .def_property_readonly("dtype", [](const memplan::TensorInfo& t) { return numpy_dtype_or_none(t.dtype); },
                             "numpy dtype (None for a type numpy lacks, such as bfloat16)")
      .def_property_readonly("shape", [](const memplan::TensorInfo& t) { return to_tuple(t.shape); },
                             "compile-time shape (the largest where it varies; -1 for an unknown dim)")
      .def_property_readonly("dim_names", [](const memplan::TensorInfo& t) { return py::tuple(py::cast(t.dim_names)); },
                             "as declared: each symbolic dim's name ('' for a dim with none)")
      .def_readonly("ranked", &memplan::TensorInfo::ranked)
      .def_property_readonly(
          "kind",
          [](const memplan::TensorInfo& t) {
            switch (t.kind) {
              case memplan::ValueKind::Sequence: return "sequence";
              case memplan::ValueKind::Optional: return "optional";
              case memplan::ValueKind::OptionalSequence: return "optional sequence";
              default: return "tensor";
            }
          },
          "'tensor', 'sequence' (a list of arrays), 'optional' or 'optional sequence' (None when empty)")
      .def_readonly("capacity_bytes", &memplan::TensorInfo::capacity_bytes)
      .def("__repr__", [](const memplan::TensorInfo& t) {
        return "TensorInfo(name=" + py::repr(py::str(t.name)).cast<std::string>() +
               ", dtype=" + py::str(numpy_dtype_or_none(t.dtype)).cast<std::string>() +
               ", shape=" + py::repr(to_tuple(t.shape)).cast<std::string>() + ")";
      });

  py::class_<PySession, std::shared_ptr<PySession>>(m, "Session",
                                                    "One arena for one model; more sessions run one model "
                                                    "with separate memory, concurrently from several threads.")
      .def(py::init([](const PyModel& model, bool check_memory, bool profile, int threads, bool adapt_to_load,
                           bool flush_denormals) {
             memplan::SessionOptions o;
             o.check_memory = check_memory;
             o.profile = profile;
             o.threads = threads;
             o.adapt_to_load = adapt_to_load;
             o.flush_denormals = flush_denormals;
             return std::make_shared<PySession>(model.model, o);
           }),
           py::arg("model"), py::kw_only(), py::arg("check_memory") = false, py::arg("profile") = false,
           py::arg("threads") = 0, py::arg("adapt_to_load") = true, py::arg("flush_denormals") = true)
      .def(
          "run",
          [](const std::shared_ptr<PySession>& self, const py::dict& inputs, bool copy) {
            return self->run(self, inputs, copy);
          },
          py::arg("inputs"), py::kw_only(), py::arg("copy") = true,
          "Runs one inference on {input name: array}; returns {output name: array}. copy=False returns "
          "read-only views into the session's memory, valid until its next run.")
      .def_property_readonly("zero_copy_inputs", &PySession::zero_copy_inputs,
                             "names of the inputs the last run read in place (64-byte aligned, C-contiguous)")
      .def("profile", &PySession::profile, "per-node times (Session(..., profile=True)), summed over runs")
      .def("reset_profile", &PySession::reset_profile)
      .def("dynamic_tensors", &PySession::dynamic_tensors,
           "{name: most bytes a run needed} for tensors allocated outside the arena")
      .def("runs_by_threads", &PySession::runs_by_threads,
           "[k]: how many runs so far used k threads (fewer while other processes hold the cores)");

  py::class_<PyModel, std::shared_ptr<PyModel>>(m, "Model", "A compiled model (memplan.compile or memplan.load).")
      .def_property_readonly("arena_bytes", [](const PyModel& p) { return p.model->arena_bytes(); })
      .def_property_readonly("external_inputs", [](const PyModel& p) { return p.model->external_inputs(); },
                             "True when the inputs have no arena bytes (compile(external_inputs=True))")
      .def_property_readonly("threads", [](const PyModel& p) { return p.model->threads(); },
                             "OpenMP threads its kernels were made for (compile's threads=, 0 chooses)")
      .def_property_readonly("inputs", [](const PyModel& p) { return tensor_infos(p.model->inputs()); })
      .def_property_readonly("outputs", [](const PyModel& p) { return tensor_infos(p.model->outputs()); })
      .def(
          "report",
          [](const PyModel& p, const std::string& format) {
            if (format == "text") return p.model->report_text();
            if (format == "json") return p.model->report_json();
            throw py::value_error("report format must be 'text' or 'json', got '" + format + "'");
          },
          py::arg("format") = "text", "the memory report, as `memplan compile --report text|json` prints it")
      .def(
          "save_plan",
          [](const PyModel& p, const std::string& path) {
            py::gil_scoped_release nogil;
            p.model->save_plan(path);
          },
          py::arg("path"), "writes the plan (memplan.load and `memplan run --plan` read it)")
      .def(
          "run",
          [](PyModel& p, const py::dict& inputs, bool copy) {
            if (!p.session) p.session = std::make_shared<PySession>(p.model, memplan::SessionOptions{});
            return p.session->run(p.session, inputs, copy);
          },
          py::arg("inputs"), py::kw_only(), py::arg("copy") = true,
          "Session.run on the model's own session (made on first use).")
      .def("__repr__", [](const PyModel& p) {
        return "<memplan.Model: " + std::to_string(p.model->inputs().size()) + " inputs, " +
               std::to_string(p.model->outputs().size()) + " outputs, arena " +
               std::to_string(p.model->arena_bytes()) + " bytes>";
      });

  m.def("compile", &compile, py::arg("model_path"), py::kw_only(),
        py::arg("shapes") = py::none(), py::arg("dims") = py::none(), py::arg("bounds") = py::none(),
        py::arg("strategy") = "auto",
        py::arg("static_only") = false, py::arg("alignment") = 64, py::arg("threads") = 0,
        py::arg("prefer") = "balanced", py::arg("external_inputs") = false, py::arg("max_arena") = 0,
        "Compiles an ONNX model: shapes fixes input shapes, dims symbolic dims, bounds the largest shapes of "
        "run-time-sized tensors; strategy is naive, best-fit, greedy-by-size, greedy-by-breadth or auto; prefer "
        "is balanced, memory or speed (kernels chosen for memory, and which 3x3 convolutions run Winograd's "
        "kernels, whose weights take more bytes); external_inputs plans no arena bytes for "
        "the inputs (run reads 64-byte-aligned arrays in place: memplan.aligned_empty); max_arena a budget in "
        "bytes (0: none), met with leaner kernels and the first layers in tiles of rows, else memplan.Error.");
  m.def("load", &load, py::arg("model_path"), py::arg("plan_path"), py::arg("threads") = 0,
        "Loads a model with a plan from Model.save_plan or `memplan compile -o`; threads as compile's.");
  m.def(
      "model_inputs",
      [](const std::string& path) {
        std::vector<memplan::TensorInfo> infos;
        {
          py::gil_scoped_release nogil;
          infos = memplan::model_inputs(path);
        }
        return tensor_infos(infos);
      },
      py::arg("model_path"), "the inputs a model declares (symbolic dims are -1)");
  py::class_<memplan::ModelMetadata>(m, "ModelMetadata", "A model file's names and descriptions.")
      .def_readonly("producer_name", &memplan::ModelMetadata::producer_name)
      .def_readonly("producer_version", &memplan::ModelMetadata::producer_version)
      .def_readonly("domain", &memplan::ModelMetadata::domain)
      .def_readonly("description", &memplan::ModelMetadata::description)
      .def_readonly("graph_name", &memplan::ModelMetadata::graph_name)
      .def_readonly("graph_description", &memplan::ModelMetadata::graph_description)
      .def_readonly("version", &memplan::ModelMetadata::version)
      .def_readonly("custom_metadata_map", &memplan::ModelMetadata::custom);
  m.def(
      "declared_model",
      [](const std::string& path) {
        memplan::ModelDeclaration d;
        {
          py::gil_scoped_release nogil;
          d = memplan::declared_model(path);
        }
        return py::make_tuple(tensor_infos(d.inputs), tensor_infos(d.outputs), d.metadata);
      },
      py::arg("model_path"),
      "(inputs, outputs, metadata) as the model file declares them, before any compile (symbolic dims are -1)");
  m.def("aligned_empty", &aligned_empty, py::arg("shape"), py::arg("dtype") = "float32",
        "an uninitialised C-contiguous array whose data is 64-byte aligned: runs read it without a copy");
}
