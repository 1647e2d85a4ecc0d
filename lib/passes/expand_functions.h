// Ops that ONNX 1.12 defines by a function body (GreaterOrEqual, Softmax-13, LayerNormalization,
// ...) run as that body where memplan has no kernel that takes the node: the node is replaced by
// the body's nodes, which shape inference then infers (and expands again, if they are function
// ops themselves) and which get kernels of their own.
#pragma once

#include <cstddef>

#include "ir/graph.h"

namespace memplan {

// True when the node should run as its function body: ONNX defines its op at the node's opset by
// a function (fixed, or built from the node's attributes and input types), every input it has is
// typed, and no kernel of memplan's registry accepts it (rt::KernelRegistry::accepts).
bool should_expand_function(const Node& node);

// Replaces g.nodes[node_index] by the nodes of its function body, in its place in execution
// order: the body's inputs are the node's inputs, its outputs the node's outputs (the values
// themselves, so readers and graph outputs are untouched), every other value is new and uniquely
// named in `g` ("<node>/<body name>"), the body's Constants become constants, attributes the body
// takes from the node (ref_attr_name) are the node's or the schema's defaults, and each new node's
// opset is the one the body imports for its domain. Producers and consumers are rebuilt.
// Returns false, leaving `g` as it was, when the op has no body at the node's opset or the body
// holds subgraphs (Range's Loop). Fails naming the file, graph and node on a body that cannot be
// built or spliced.
bool expand_function_node(Model& model, Graph& g, size_t node_index);

}  // namespace memplan
