#include "ir/unreachable_branch.h"

#include <spdlog/spdlog.h>

namespace memplan {

std::optional<IfBranch> enclosing_if_branch(const Graph& g) {
  for (const Graph* cur = &g; cur->owner; cur = cur->parent)
    if (cur->owner->op_type == "If" && cur->owner->domain.empty())
      return IfBranch{cur->owner, cur->owner_attribute == "then_branch"};
  return std::nullopt;
}

bool branch_cannot_run(const IfBranch& branch, const Error& why) {
  return why.kind() == ErrorKind::InvalidInput && !unreachable_branch_reason(*branch.node, !branch.then_branch);
}

void drop_branch(const IfBranch& branch, const std::string& file, const Error& why) {
  Node& node = *branch.node;
  Graph* dead = branch.graph();
  const Graph* live = IfBranch{&node, !branch.then_branch}.graph();
  if (!dead || !live || live->outputs.size() != dead->outputs.size())
    fail_internal(node.describe() + ": no branch to drop beside a branch of as many outputs");
  std::string reason = why.message();
  if (reason.starts_with(file + ": ")) reason.erase(0, file.size() + 2);
  const char* which = branch.then_branch ? "then_branch" : "else_branch";
  spdlog::warn("{}: {}: {}: {} cannot run on these input shapes; the If fails if it takes it ({})", file,
               node.graph->path(), node.describe(), which, reason);

  dead->nodes.clear();
  dead->initializers.clear();
  dead->outputs.clear();
  dead->captures.clear();
  while (!dead->values.empty()) dead->release_value(dead->values.back().get());
  for (const Value* like : live->outputs) {
    Value* out = dead->add_fresh_value(node.name + "_unreachable");
    auto empty = std::make_shared<Tensor>();
    empty->dtype = like->type.dtype;
    empty->dims = {0};
    out->type.dtype = like->type.dtype;
    out->type.has_rank = true;
    out->type.dims = {Dim{0, {}}};
    out->capacity_known = true;
    out->constant = std::move(empty);
    out->is_graph_output = true;
    dead->outputs.push_back(out);
  }
  Attribute recorded;
  recorded.name = branch.then_branch ? kUnreachableThenAttr : kUnreachableElseAttr;
  recorded.kind = Attribute::Kind::String;
  recorded.s = std::move(reason);
  node.attributes.push_back(std::move(recorded));
}

const std::string* unreachable_branch_reason(const Node& node, bool then_branch) {
  // Every If asks this on every run: compared in place, since a std::string of the name would be
  // a heap allocation per run.
  const char* name = then_branch ? kUnreachableThenAttr : kUnreachableElseAttr;
  for (const Attribute& a : node.attributes)
    if (a.name == name && a.kind == Attribute::Kind::String) return &a.s;
  return nullptr;
}

}  // namespace memplan
