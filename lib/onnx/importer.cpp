#include "onnx/importer.h"

#include <spdlog/spdlog.h>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/stubs/logging.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

#include "memplan/error.h"
#include "onnx/attributes.h"
#include "onnx/container_type.h"
#include "onnx/inline_weights.h"
#include "onnx/loop_built_lists.h"
#include "onnx/onnx_pb.h"
#include "onnx/structure_checks.h"
#include "onnx/tensor_proto.h"
#include "util/checked.h"
#include "util/sha256.h"

namespace memplan {
namespace {

namespace fs = std::filesystem;

// Protobuf nests three messages per subgraph level (Graph > Node > Attribute). The parser's limit
// sits well above kMaxGraphNesting, so a too-deep model parses and gets a precise message from
// the importer, yet stays far below what could exhaust the stack.
constexpr int kProtobufRecursionLimit = 3 * 1200;

std::string canonical_domain(const std::string& d) { return d == "ai.onnx" ? "" : d; }

class Importer {
 public:
  Importer(std::string file, fs::path dir, const std::map<std::string, int64_t>& opsets)
      : file_(std::move(file)), dir_(std::move(dir)), opsets_(opsets) {}

  // `owned`, when given, is `gp` itself, to release each initializer's bytes once the IR holds
  // them: the model's weights are then in memory once, not twice.
  void import_graph(const onnx::GraphProto& gp, Graph& g, int depth, onnx::GraphProto* owned = nullptr) {
    g.name = gp.name();
    g.depth = depth;
    if (gp.sparse_initializer_size() > 0)
      fail_unsupported(where(g) + ": sparse initializers are not supported");

    std::map<std::string, const onnx::TensorProto*> initializer_protos;
    for (const auto& t : gp.initializer()) initializer_protos[t.name()] = &t;

    // Every name this graph defines, once (SSA), checked before the IR is built.
    SsaScope ssa(where(g));
    for (const auto& vi : gp.input())
      if (!initializer_protos.count(vi.name())) ssa.define(vi.name(), "graph input");
    for (const auto& t : gp.initializer()) ssa.define(t.name(), "initializer");

    for (const auto& vi : gp.input()) {
      // IR < 4 lists initializers among the inputs too: those are constants, not inputs.
      if (initializer_protos.count(vi.name())) continue;
      Value* v = g.add_value(vi.name());
      v->type = type_from_proto(vi.type(), g, vi.name());
      v->is_graph_input = true;
      g.inputs.push_back(v);
    }
    for (int i = 0; i < gp.initializer_size(); ++i) {
      const onnx::TensorProto& t = gp.initializer(i);
      Value* v = g.add_value(t.name());
      auto tensor = std::make_shared<Tensor>(tensor_from_proto(t, dir_, where(g) + ": initializer '" + t.name() + "'"));
      v->type = TensorType::of(*tensor);
      v->constant = std::move(tensor);
      g.initializers.push_back(v);
      if (owned && owned->initializer(i).has_raw_data()) delete owned->mutable_initializer(i)->release_raw_data();
    }

    // Every local name first, so inputs resolve to this scope before enclosing ones (shadowing).
    std::vector<const onnx::NodeProto*> kept;
    for (int i = 0; i < gp.node_size(); ++i) {
      const auto& np = gp.node(i);
      if (np.op_type() == "Constant" && canonical_domain(np.domain()).empty()) {
        const std::string what = where(g) + ": Constant node '" + np.name() + "'";
        if (np.output_size() != 1) fail(what + " must have one output");
        if (auto opset = opsets_.find(""); opset != opsets_.end())
          check_node_attributes(np, "", opset->second, what);
        ssa.define(np.output(0), "output of Constant node '" + np.name() + "'");
        Value* v = g.add_value(np.output(0));
        auto tensor = std::make_shared<Tensor>(constant_value(np, g));
        v->type = TensorType::of(*tensor);
        v->constant = std::move(tensor);
        continue;
      }
      kept.push_back(&np);
    }
    for (size_t i = 0; i < kept.size(); ++i) {
      auto node = std::make_unique<Node>();
      const auto& np = *kept[i];
      node->name = np.name().empty() ? np.op_type() + "_" + std::to_string(i) : np.name();
      node->op_type = np.op_type();
      node->domain = canonical_domain(np.domain());
      node->graph = &g;
      auto opset = opsets_.find(node->domain);
      if (opset == opsets_.end())
        fail(where(g) + ": " + node->describe() + " uses domain '" + np.domain() +
             "', which the model does not import (opset_import)");
      node->opset = opset->second;
      check_node_attributes(np, node->domain, node->opset, where(g) + ": " + node->describe());
      for (const auto& out : np.output()) {
        if (!out.empty()) ssa.define(out, "output of " + node->describe());
        node->outputs.push_back(out.empty() ? nullptr : g.add_value(out));
      }
      g.nodes.push_back(std::move(node));
    }
    for (size_t i = 0; i < kept.size(); ++i) {
      const auto& np = *kept[i];
      Node& node = *g.nodes[i];
      for (const auto& in : np.input()) {
        if (in.empty()) {
          node.inputs.push_back(nullptr);
          continue;
        }
        Value* v = g.lookup(in);
        if (!v)
          fail(where(g) + ": input '" + in + "' of " + node.describe() +
               " is not produced by any node, graph input or initializer");
        node.inputs.push_back(v);
      }
      for (const auto& ap : np.attribute()) {
        // Names starting "memplan_" are what memplan's own passes record on nodes (fused forms,
        // unreachable branches): a file's are unknown attributes, ignored like any other.
        if (ap.name().rfind(kReservedAttributePrefix, 0) == 0) continue;
        Attribute a = attribute_from_proto(ap, dir_, where(g) + ": " + node.describe());
        if (a.kind == Attribute::Kind::Graph) a.graphs.push_back(import_subgraph(ap.g(), node, ap.name(), depth));
        if (a.kind == Attribute::Kind::Graphs)
          for (const auto& sub : ap.graphs()) a.graphs.push_back(import_subgraph(sub, node, ap.name(), depth));
        node.attributes.push_back(std::move(a));
      }
    }

    for (const auto& vi : gp.output()) {
      Value* v = g.lookup(vi.name());
      if (!v) fail(where(g) + ": graph output '" + vi.name() + "' is not produced by anything");
      if (v->graph == &g) {
        v->is_graph_output = true;
        merge_declared(v, vi.type(), g);
      }
      g.outputs.push_back(v);
    }
    for (const auto& vi : gp.value_info())
      if (Value* v = g.find_local(vi.name())) merge_declared(v, vi.type(), g);
  }

 private:
  std::string where(const Graph& g) const { return file_ + ": " + g.path(); }

  Graph* import_subgraph(const onnx::GraphProto& gp, Node& owner, const std::string& attribute, int depth) {
    if (depth + 1 > kMaxGraphNesting)
      fail_unsupported(file_ + ": subgraphs are nested more than " + std::to_string(kMaxGraphNesting) +
                       " levels deep (at " + owner.describe() + ")");
    auto sub = std::make_unique<Graph>();
    sub->parent = owner.graph;
    sub->owner = &owner;
    sub->owner_attribute = attribute;
    Graph* raw = sub.get();
    owner.subgraphs.push_back(std::move(sub));
    import_graph(gp, *raw, depth + 1);
    return raw;
  }

  TensorType type_from_proto(const onnx::TypeProto& tp, const Graph& g, const std::string& name) {
    TensorType t;
    if (tp.value_case() == onnx::TypeProto::VALUE_NOT_SET) return t;  // untyped: inferred later
    // Containers of dense tensors: a sequence, an optional tensor, an optional sequence.
    const onnx::TypeProto* element = &container_element(tp, t.container);
    if (t.is_container() && element->value_case() == onnx::TypeProto::VALUE_NOT_SET) return t;
    if (!element->has_tensor_type())
      fail_unsupported(where(g) + ": tensor '" + name +
                       "' is a map, a sparse tensor or a container of them; memplan runs dense tensors, "
                       "sequences of them and optionals");
    const auto& tt = element->tensor_type();
    if (dtype_is_newer_than_onnx_1_12(tt.elem_type()))
      fail_unsupported(where(g) + ": tensor '" + name + "' has element type " +
                       dtype_name(static_cast<DType>(tt.elem_type())) + ", which no memplan kernel takes");
    if (!dtype_is_known(tt.elem_type()))
      fail(where(g) + ": tensor '" + name + "' has unknown element type " + std::to_string(tt.elem_type()));
    t.dtype = static_cast<DType>(tt.elem_type());
    if (!tt.has_shape()) return t;
    t.has_rank = true;
    for (const auto& d : tt.shape().dim()) {
      Dim dim;
      if (d.has_dim_value()) {
        if (d.dim_value() < 0)
          fail(where(g) + ": tensor '" + name + "' has dimension " + std::to_string(d.dim_value()));
        dim.value = d.dim_value();
      } else if (d.has_dim_param()) {
        dim.symbol = d.dim_param();
      }
      t.dims.push_back(dim);
    }
    return t;
  }

  // Declared types (outputs, value_info) fill what the value does not know yet.
  void merge_declared(Value* v, const onnx::TypeProto& tp, const Graph& g) {
    TensorType declared = type_from_proto(tp, g, v->name);
    if (declared.is_container()) v->type.container = declared.container;
    if (v->type.dtype == DType::Undefined) v->type.dtype = declared.dtype;
    if (!v->type.has_rank && declared.has_rank) {
      v->type.has_rank = true;
      v->type.dims = declared.dims;
    }
  }

  Tensor constant_value(const onnx::NodeProto& np, const Graph& g) {
    return constant_node_value(np, dir_, where(g) + ": Constant node '" + np.name() + "'");
  }

  std::string file_;
  fs::path dir_;
  const std::map<std::string, int64_t>& opsets_;
};

void silence_protobuf_logging() {
  // Protobuf prints parse failures to stderr on its own; we report them as one clear line.
  static bool once = [] {
    google::protobuf::SetLogHandler(nullptr);
    return true;
  }();
  (void)once;
}

}  // namespace

namespace {

// Parses from any protobuf stream; `size` is checked first (protobuf cannot parse over 2 GiB).
onnx::ModelProto parse_model(google::protobuf::io::ZeroCopyInputStream& raw, uint64_t size, const std::string& path) {
  silence_protobuf_logging();
  if (size > static_cast<uint64_t>(INT32_MAX))
    fail_unsupported(path + ": models over 2 GiB must keep their weights in external data files");
  onnx::ModelProto mp;
  google::protobuf::io::CodedInputStream coded(&raw);
  coded.SetRecursionLimit(kProtobufRecursionLimit);
  if (!mp.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage())
    fail(path + ": not a valid ONNX model (protobuf parse failed: the file is truncated, corrupt, not ONNX, "
                "or nested too deeply)");
  return mp;
}

Model import_parsed(onnx::ModelProto& mp, std::string sha256, const std::string& path);

}  // namespace

Model import_model(const std::string& path) {
  // The file is read twice in pieces, hashed then parsed, never held whole: its weights are in
  // memory once, in the parsed model.
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path + ": cannot open: " + std::strerror(errno));
  Sha256 hash;
  uint64_t size = 0;
  std::vector<char> chunk(1 << 16);
  while (in) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    hash.update(std::string_view(chunk.data(), static_cast<size_t>(in.gcount())));
    size += static_cast<uint64_t>(in.gcount());
  }
  if (!in.eof()) fail(path + ": cannot read");
  if (size > static_cast<uint64_t>(INT32_MAX))
    fail_unsupported(path + ": models over 2 GiB must keep their weights in external data files");
  // Parsed with its large weights out of line, each then read from the file into its tensor once
  // (onnx/inline_weights.h); as it is where the rewrite does not understand the file.
  in.clear();
  in.seekg(0);
  if (std::optional<std::string> lean = out_of_line_weights(in, size, std::filesystem::path(path).filename().string())) {
    google::protobuf::io::ArrayInputStream raw(lean->data(), static_cast<int>(lean->size()));
    onnx::ModelProto mp = parse_model(raw, lean->size(), path);
    lean.reset();
    return import_parsed(mp, hash.hex(), path);
  }
  in.clear();
  in.seekg(0);
  google::protobuf::io::IstreamInputStream raw(&in);
  onnx::ModelProto mp = parse_model(raw, size, path);
  return import_parsed(mp, hash.hex(), path);
}

Model import_model_bytes(const std::string& bytes, const std::string& path) {
  google::protobuf::io::ArrayInputStream raw(bytes.data(), static_cast<int>(std::min<size_t>(bytes.size(), INT32_MAX)));
  onnx::ModelProto mp = parse_model(raw, bytes.size(), path);
  return import_parsed(mp, sha256_hex(bytes), path);
}

namespace {

Model import_parsed(onnx::ModelProto& mp, std::string sha256, const std::string& path) {
  if (!mp.has_graph() || mp.ir_version() <= 0)
    fail(path + ": not a valid ONNX model (no graph or no ir_version)");
  if (mp.ir_version() > kMaxIrVersion)
    fail_unsupported(path + ": IR version " + std::to_string(mp.ir_version()) +
                     " is newer than memplan supports (at most " + std::to_string(kMaxIrVersion) +
                     ", ONNX 1.16's); re-export the model with an older exporter setting");

  Model model;
  model.path = path;
  model.ir_version = mp.ir_version();
  model.producer = mp.producer_name();
  model.metadata = {mp.producer_name(), mp.producer_version(), mp.domain(), mp.doc_string(), mp.graph().name(),
                    mp.graph().doc_string(), mp.model_version(), {}};
  for (const auto& p : mp.metadata_props()) model.metadata.custom[p.key()] = p.value();
  model.sha256 = std::move(sha256);
  for (const auto& op : mp.opset_import()) model.opsets[canonical_domain(op.domain())] = op.version();
  if (!model.opsets.count("")) {
    if (mp.opset_import_size() == 0) fail(path + ": the model declares no opset_import");
  } else if (model.opsets[""] > kMaxDefaultOpset) {
    fail_unsupported(path + ": opset " + std::to_string(model.opsets[""]) +
                     " is not supported (memplan supports the default ONNX domain up to opset " +
                     std::to_string(kMaxDefaultOpset) + "; see docs/OPSETS.md)");
  }
  if (mp.functions_size() > 0) fail_unsupported(path + ": model-local functions are not supported");

  // Lists built by appending in a loop (torch's scripted `out.append(...)`) are scan outputs.
  if (const int lists = lower_loop_built_lists(mp))
    spdlog::debug("{}: {} list(s) built in loops read as Loop scan outputs", path, lists);

  model.main = std::make_unique<Graph>();
  const fs::path dir = fs::path(path).parent_path();
  Importer importer(path, dir, model.opsets);
  importer.import_graph(mp.graph(), *model.main, 0, mp.mutable_graph());

  rebuild_uses(*model.main);
  try {
    for_each_graph(*model.main, [](Graph& g) { sort_topologically(g); });
  } catch (const Error& e) {
    throw Error(e.kind(), path + ": " + e.what());
  }
  return model;
}

}  // namespace

}  // namespace memplan
