// Runs ONNX's own per-operator type and shape inference on one IR node, and gives the function
// bodies ONNX defines some ops by (passes/expand_functions.h splices them in).
#pragma once

#include <map>
#include <optional>
#include <string>

#include "ir/graph.h"
#include "onnx/onnx_pb.h"

namespace memplan {

// True when ONNX 1.12 has a schema for the node's op at its opset.
bool has_onnx_schema(const Node& node);

// Fails, naming the node, when it has more or fewer inputs or outputs than its ONNX schema allows,
// or omits a required input: folding and the kernels bind them by position.
void check_schema_arity(const Node& node, const std::string& file);

// True when ONNX 1.12 defines the node's op, at the node's opset, by a function body: a fixed
// one (GreaterOrEqual, HardSwish, ...) or one built for the node's attributes and input types
// (Softmax-13, LayerNormalization, ...).
bool has_function_body(const Node& node);

struct FunctionBody {
  onnx::FunctionProto proto;
  // What the body's attribute references (ref_attr_name) read: the node's attributes, and the
  // schema's default for each one the node omits. A reference to neither is dropped.
  std::map<std::string, onnx::AttributeProto> attributes;
};

// The node's function body at its opset; std::nullopt when the op has none. A context-dependent
// body is built from the node's input types, so they must be inferred first. Fails naming the
// file, graph and node when ONNX cannot build it.
std::optional<FunctionBody> function_body_of(const Node& node, const std::string& file);

// True when a body node has a graph attribute (Range's Loop): such bodies are neither inferred
// nor spliced by memplan.
bool body_has_subgraphs(const onnx::FunctionProto& body);

// A copy of a body node whose attribute references (ref_attr_name) are replaced by the values
// they name in body.attributes; a reference to an attribute that is not there is dropped, as ONNX
// does.
onnx::NodeProto resolve_body_node(const FunctionBody& body, const onnx::NodeProto& n);

// The opset version the body imports for `domain` ("ai.onnx" is ""); a body that imports nothing
// for the default domain uses it at the node's own version. std::nullopt for a domain it lacks.
std::optional<int64_t> body_opset(const FunctionBody& body, const Node& node, const std::string& domain);

// Infers the node's output types from its inputs (constant inputs are visible to the inference
// function, so Reshape sees a folded shape). Merges the result into each output's type: inferred
// dims win over unknown ones. An op whose own inference leaves an output untyped, and that has a
// function body, is inferred through the body. Throws memplan::Error naming the node when ONNX
// rejects it.
void infer_with_onnx(Node& node, const std::string& file);

}  // namespace memplan
