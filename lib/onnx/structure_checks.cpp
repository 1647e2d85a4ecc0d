#include "onnx/structure_checks.h"

#include <set>

#include "memplan/error.h"
#include "onnx/attributes.h"
#include "onnx/defs/schema.h"
#include "onnx/onnx_pb.h"

namespace memplan {

namespace {
using AP = onnx::AttributeProto;

std::string type_name(AP::AttributeType t) {
  return t == AP::UNDEFINED ? "untyped and empty" : AP::AttributeType_Name(t);
}

bool is_list(AP::AttributeType t) {
  return t == AP::FLOATS || t == AP::INTS || t == AP::STRINGS || t == AP::TENSORS || t == AP::GRAPHS ||
         t == AP::SPARSE_TENSORS || t == AP::TYPE_PROTOS;
}
}  // namespace

void SsaScope::define(const std::string& name, const std::string& definer) {
  auto [it, added] = definers_.emplace(name, definer);
  if (!added)
    fail(where_ + ": tensor '" + name + "' is defined twice (" + it->second + ", then " + definer +
         "); an ONNX graph defines each name once");
}

void check_node_attributes(const onnx::NodeProto& np, const std::string& domain, int64_t opset,
                           const std::string& where) {
  const onnx::OpSchema* schema =
      onnx::OpSchemaRegistry::Schema(np.op_type(), static_cast<int>(opset), domain);
  std::set<std::string> seen;
  for (const AP& a : np.attribute()) {
    if (!seen.insert(a.name()).second)
      fail(where + ": attribute '" + a.name() + "' is given twice");
    const AP::AttributeType got = attribute_type(a);
    const bool graph = got == AP::GRAPH || got == AP::GRAPHS;
    if (!schema) {
      if (graph) fail(where + ": attribute '" + a.name() + "' is a graph, but the op is unknown to ONNX");
      continue;
    }
    auto declared = schema->attributes().find(a.name());
    if (declared == schema->attributes().end()) {
      // Unknown attributes are ignored (as by memplan's kernels), but a graph would become a
      // subgraph of a node that never runs it.
      if (graph) fail(where + ": attribute '" + a.name() + "' is a graph, which " + np.op_type() + " does not take");
      continue;
    }
    const AP::AttributeType want = declared->second.type;
    // An old exporter's empty list has no type and no value: it reads as the empty list.
    if (got == want || (got == AP::UNDEFINED && is_list(want))) continue;
    fail(where + ": attribute '" + a.name() + "' is " + type_name(got) + ", but " + np.op_type() + " (opset " +
         std::to_string(opset) + ") takes " + type_name(want));
  }
}

}  // namespace memplan
