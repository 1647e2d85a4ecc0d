#include "passes/inline_if.h"

#include <algorithm>

#include "memplan/error.h"

namespace memplan {

size_t inline_if_branch(Graph& g, size_t index, bool take_then) {
  const Node& checked = *g.nodes.at(index);
  Graph* branch = checked.subgraph(take_then ? "then_branch" : "else_branch");
  if (!branch) fail(g.path() + ": " + checked.describe() + ": missing branch");
  if (branch->outputs.size() != checked.outputs.size())
    fail(g.path() + ": " + checked.describe() + ": branch returns " + std::to_string(branch->outputs.size()) +
         " values, the If has " + std::to_string(checked.outputs.size()) + " outputs");
  std::unique_ptr<Node> if_node = std::move(g.nodes[index]);

  // Branch outputs made by branch nodes are renamed to the If's outputs; the others (constants,
  // outer values, a value returned twice) get an Identity that the constant folder may fold.
  for (size_t k = 0; k < branch->outputs.size(); ++k) {
    Value* out = if_node->outputs[k];
    Value* inner = branch->outputs[k];
    if (!out) continue;
    const bool movable = inner->graph == branch && inner->producer && inner->producer->graph == branch &&
                         std::count(branch->outputs.begin(), branch->outputs.end(), inner) == 1;
    if (movable) {
      std::replace(inner->producer->outputs.begin(), inner->producer->outputs.end(), inner, out);
      replace_uses(*branch, inner, out);
      out->producer = inner->producer;
      branch->release_value(inner);
    } else {
      auto id = std::make_unique<Node>();
      id->name = if_node->name + "_" + out->name + "_identity";
      id->op_type = "Identity";
      id->opset = if_node->opset;
      id->graph = branch;
      id->inputs = {inner};
      id->outputs = {out};
      branch->nodes.push_back(std::move(id));
    }
  }

  while (!branch->values.empty()) g.adopt_value(branch->release_value(branch->values.front().get()));
  std::vector<std::unique_ptr<Node>> moved = std::move(branch->nodes);
  for (auto& n : moved) {
    n->graph = &g;
    for (auto& sub : n->subgraphs) {
      sub->parent = &g;
      for_each_graph(*sub, [](Graph& s) { s.depth -= 1; });
    }
  }
  const size_t count = moved.size();
  g.nodes.erase(g.nodes.begin() + static_cast<std::ptrdiff_t>(index));
  g.nodes.insert(g.nodes.begin() + static_cast<std::ptrdiff_t>(index), std::make_move_iterator(moved.begin()),
                 std::make_move_iterator(moved.end()));
  return count;
}

bool inline_constant_if(Graph& g, size_t index) {
  const Node& n = *g.nodes[index];
  if (n.op_type != "If" || !n.domain.empty()) return false;
  const Value* cond = n.inputs.empty() ? nullptr : n.inputs[0];
  if (!cond || !cond->constant) return false;
  if (cond->constant->element_count() != 1)
    fail(g.path() + ": " + n.describe() + ": its condition '" + cond->name + "' has " +
         std::to_string(cond->constant->element_count()) + " elements, not one");
  inline_if_branch(g, index, cond->constant->int_at(0) != 0);
  return true;
}

}  // namespace memplan
