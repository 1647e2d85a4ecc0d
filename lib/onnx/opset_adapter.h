// ai.onnx opsets 18-23 on ONNX 1.12's schemas, which end at opset 17.
//
// Most op versions of 18-23 only widened types (bfloat16, float8, int4) or added an attribute
// that holds its default in every model a CPU runtime sees; others moved an attribute to an
// input (Reduce* axes, DFT axis), added one (Split num_outputs, Pad axes, Resize antialias) or
// renamed values (GridSample's modes). Each op version of 18-23 has one rule here: adapt the node
// to the highest version ONNX 1.12 knows (checking that what that version cannot say holds its
// default), rewrite it into that version's form (an axes input becomes the attribute, num_outputs
// the split sizes), or refuse it naming op, version and node. An op version without a rule is
// never guessed at: the table lists every version of every op that changed in 18-23, and
// docs/OPSETS.md is generated from it (`memplan opsets`).
//
// Rules run while shapes flow (a shape-inference rewrite hook), on every graph, subgraphs
// included: some need an input's shape (num_outputs) or a constant that folding has just made.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace memplan {

// The newest default-domain opset ONNX 1.12's schemas describe: adapted nodes end at it.
constexpr int64_t kOnnxSchemaOpset = 17;

enum class OpsetHandling {
  Downgrade,  // runs as the op's highest version up to 17, unchanged (only types were widened)
  Rewrite,    // rewritten into that version's form (attributes and inputs moved, checked)
  Own,        // a new op: memplan's own kernel and shape inference (shapes/own_op_inference.h)
  Refuse,     // refused, naming op, version and node, with the reason
};

struct OpsetRule {
  std::string op;
  int since = 0;  // the op version (18-23) the rule is for
  OpsetHandling handling = OpsetHandling::Downgrade;
  std::string how;  // what changed and what memplan does (docs/OPSETS.md; the refusal's reason)
};

// Every op version of ai.onnx opsets 18-23, in op then version order.
const std::vector<OpsetRule>& opset_rules();

// The rule for `node` (default domain, opset 18 or more, an op with a version in 18..its opset),
// else null: the op did not change after 17, so ONNX 1.12's schema describes it.
const OpsetRule* opset_rule_for(const Node& node);

// Adapts g.nodes[index] by its rule, in place (the node, its attributes and inputs, with the uses
// of its own graph's values), and sets its opset to kOnnxSchemaOpset (an op of memplan's own keeps
// its version); throws memplan::Error naming the model's file, the graph and the node for a
// refusal or a form the rule cannot map. Nodes of other domains, of opsets up to 17, and adapted
// nodes are left alone. Returns true where the rule put new nodes before the adapted one (a
// blocked QuantizeLinear becomes the arithmetic it stands for): g.nodes[index] is then the first
// of them.
bool adapt_opset(Model& model, Graph& g, size_t index);

// docs/OPSETS.md: the table of every rule, as markdown.
std::string opset_rules_markdown();

}  // namespace memplan
