#include "onnx/attributes.h"

#include <cstring>

#include "memplan/error.h"
#include "onnx/onnx_pb.h"
#include "onnx/tensor_proto.h"

namespace memplan {

namespace {
using AP = onnx::AttributeProto;

template <typename T>
Tensor scalar_tensor(DType dtype, T value) {
  Tensor t;
  t.dtype = dtype;
  t.bytes.resize(sizeof(T));
  std::memcpy(t.bytes.data(), &value, sizeof(T));
  return t;
}

}  // namespace

// Old exporters leave `type` unset; the field that is filled tells the kind.
onnx::AttributeProto_AttributeType attribute_type(const AP& p) {
  if (p.type() != AP::UNDEFINED) return p.type();
  if (p.has_f()) return AP::FLOAT;
  if (p.has_i()) return AP::INT;
  if (p.has_s()) return AP::STRING;
  if (p.has_t()) return AP::TENSOR;
  if (p.has_g()) return AP::GRAPH;
  if (p.floats_size()) return AP::FLOATS;
  if (p.ints_size()) return AP::INTS;
  if (p.strings_size()) return AP::STRINGS;
  if (p.graphs_size()) return AP::GRAPHS;
  return AP::UNDEFINED;
}

Attribute attribute_from_proto(const AP& p, const std::filesystem::path& model_dir, const std::string& what) {
  Attribute a;
  a.name = p.name();
  switch (attribute_type(p)) {
    case AP::FLOAT: a.kind = Attribute::Kind::Float; a.f = p.f(); break;
    case AP::INT: a.kind = Attribute::Kind::Int; a.i = p.i(); break;
    case AP::STRING: a.kind = Attribute::Kind::String; a.s = p.s(); break;
    case AP::TENSOR:
      a.kind = Attribute::Kind::Tensor;
      a.tensor = std::make_shared<Tensor>(tensor_from_proto(p.t(), model_dir, what + " attribute '" + p.name() + "'"));
      break;
    case AP::FLOATS: a.kind = Attribute::Kind::Floats; a.floats.assign(p.floats().begin(), p.floats().end()); break;
    case AP::INTS: a.kind = Attribute::Kind::Ints; a.ints.assign(p.ints().begin(), p.ints().end()); break;
    case AP::STRINGS: a.kind = Attribute::Kind::Strings; a.strings.assign(p.strings().begin(), p.strings().end()); break;
    case AP::GRAPH: a.kind = Attribute::Kind::Graph; break;
    case AP::GRAPHS: a.kind = Attribute::Kind::Graphs; break;
    default: a.kind = Attribute::Kind::Other; break;  // sparse tensors, type protos: kept by name only
  }
  return a;
}

void attribute_to_proto(const Attribute& a, AP& p) {
  p.set_name(a.name);
  switch (a.kind) {
    case Attribute::Kind::Float: p.set_type(AP::FLOAT); p.set_f(a.f); break;
    case Attribute::Kind::Int: p.set_type(AP::INT); p.set_i(a.i); break;
    case Attribute::Kind::String: p.set_type(AP::STRING); p.set_s(a.s); break;
    case Attribute::Kind::Tensor: p.set_type(AP::TENSOR); tensor_to_proto(*a.tensor, *p.mutable_t()); break;
    case Attribute::Kind::Floats: p.set_type(AP::FLOATS); for (float f : a.floats) p.add_floats(f); break;
    case Attribute::Kind::Ints: p.set_type(AP::INTS); for (int64_t i : a.ints) p.add_ints(i); break;
    case Attribute::Kind::Strings: p.set_type(AP::STRINGS); for (const auto& s : a.strings) p.add_strings(s); break;
    case Attribute::Kind::Graph: p.set_type(AP::GRAPH); break;
    case Attribute::Kind::Graphs: p.set_type(AP::GRAPHS); break;
    case Attribute::Kind::Other: break;
  }
}

Tensor constant_node_value(const onnx::NodeProto& np, const std::filesystem::path& model_dir, const std::string& what) {
  if (np.attribute_size() != 1) fail(what + " must have exactly one value attribute");
  const auto& a = np.attribute(0);
  if (a.name() == "value") return tensor_from_proto(a.t(), model_dir, what);
  if (a.name() == "value_float") return scalar_tensor(DType::Float32, a.f());
  if (a.name() == "value_int") return scalar_tensor(DType::Int64, a.i());
  if (a.name() == "value_floats") {
    Tensor t = scalar_tensor(DType::Float32, 0.f);
    t.dims = {a.floats_size()};
    t.bytes.resize(static_cast<size_t>(a.floats_size()) * 4);
    if (a.floats_size()) std::memcpy(t.bytes.data(), a.floats().data(), t.bytes.size());
    return t;
  }
  if (a.name() == "value_ints") {
    std::vector<int64_t> v(a.ints().begin(), a.ints().end());
    return make_int64_tensor({static_cast<int64_t>(v.size())}, v);
  }
  fail_unsupported(what + ": attribute '" + a.name() + "' (string or sparse constants) is not supported");
}

}  // namespace memplan
