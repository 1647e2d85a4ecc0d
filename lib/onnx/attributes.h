// onnx::AttributeProto <-> memplan::Attribute (graph attributes are imported by the importer).
#pragma once

#include <filesystem>

#include "ir/graph.h"

#include "onnx/onnx_pb.h"

namespace memplan {

// The attribute's type; when `type` is unset (old exporters), the field that is filled tells it.
onnx::AttributeProto_AttributeType attribute_type(const onnx::AttributeProto& proto);

// Converts every kind but GRAPH/GRAPHS, which the caller imports; `what` names the node.
Attribute attribute_from_proto(const onnx::AttributeProto& proto, const std::filesystem::path& model_dir,
                               const std::string& what);
// For ONNX's shape inference functions; graph attributes are not converted.
void attribute_to_proto(const Attribute& a, onnx::AttributeProto& proto);

// The value of a Constant node (value, value_float(s), value_int(s)); `what` names the node.
// Fails on anything else (string and sparse constants are not supported).
Tensor constant_node_value(const onnx::NodeProto& np, const std::filesystem::path& model_dir, const std::string& what);

}  // namespace memplan
