// An If branch that cannot run on the model's input shapes.
//
// memplan fixes every shape before it plans, so it infers both branches of an If whose condition
// is only known at run time, and makes their kernels, on concrete shapes. A model may hold a
// branch that is inconsistent for the shapes it is given and that its caller never takes with
// them: Silero VAD v5 runs its 8 kHz branch on 256 samples and its 16 kHz branch on 512, choosing
// by a run-time `sr` input, and each branch fails on the other's input. ONNX Runtime loads such a
// model (it infers with symbolic shapes) and would fail only if the branch ran. memplan does the
// same: the branch's body is dropped, it returns empty constants, and the If records why, so that
// taking it fails with that reason instead of running anything. The dropped body holds no memory.
#pragma once

#include <optional>
#include <string>

#include "ir/graph.h"
#include "memplan/error.h"

namespace memplan {

inline constexpr const char* kUnreachableThenAttr = "memplan_unreachable_then";
inline constexpr const char* kUnreachableElseAttr = "memplan_unreachable_else";

// An If node and one of its branches.
struct IfBranch {
  Node* node = nullptr;
  bool then_branch = true;
  Graph* graph() const { return node->subgraph(then_branch ? "then_branch" : "else_branch"); }
};

// The innermost If branch that holds `g` (g itself, or an enclosing graph through Loop and Scan
// bodies); nullopt for the main graph and graphs outside any If.
std::optional<IfBranch> enclosing_if_branch(const Graph& g);

// Whether the error `why`, raised inferring or making a kernel for a node of `branch`, says that
// the branch cannot run on these shapes: a model error (not an op memplan lacks, nor a bug), while
// the other branch can still run.
bool branch_cannot_run(const IfBranch& branch, const Error& why);

// Empties the branch, makes it return an empty constant of the type of each output of the other
// branch, records `why` (less the file name every message starts with) on the If, and warns. The
// caller calls rebuild_uses afterwards.
void drop_branch(const IfBranch& branch, const std::string& file, const Error& why);

// Why the branch cannot run, or null when it can.
const std::string* unreachable_branch_reason(const Node& node, bool then_branch);

}  // namespace memplan
