// The ONNX checker's structural rules that memplan's safety rests on, checked at import with
// one-line errors naming the file, graph, node and tensor (onnx::checker's messages span lines and
// its full model check refuses models ONNX Runtime runs, so memplan checks these itself):
//   - SSA: a graph defines each tensor name once, across its inputs, initializers, Constant nodes
//     and node outputs (a subgraph may reuse an outer name: the nearest scope wins);
//   - attributes: a node names each attribute once, and every attribute its schema declares has
//     the declared type (a Conv 'kernel_shape' of FLOATS would be read as absent by memplan and as
//     something else by ONNX's inference); a graph attribute only where the schema takes one.
// Topological order is not required of the file: the importer sorts every graph (as ONNX Runtime
// does) and refuses a cycle naming a node on it.
#pragma once

#include <string>
#include <unordered_map>

namespace onnx {
class NodeProto;
}

namespace memplan {

// The names one graph defines, and what defines each (for the message when one comes twice).
class SsaScope {
 public:
  explicit SsaScope(std::string where) : where_(std::move(where)) {}
  // `definer` reads like "graph input", "initializer", "output of Relu node 'r'".
  void define(const std::string& name, const std::string& definer);

 private:
  std::string where_;  // "<file>: main graph"
  std::unordered_map<std::string, std::string> definers_;
};

// Each attribute once, with the type the node's schema (domain, opset) declares for it. Nodes of
// an unknown op or domain are checked for duplicates and stray graphs only. `where` is
// "<file>: <graph path>: <Op> node '<name>'".
void check_node_attributes(const onnx::NodeProto& node, const std::string& domain, int64_t opset,
                           const std::string& where);

}  // namespace memplan
