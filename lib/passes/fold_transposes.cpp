#include "passes/fold_transposes.h"

#include <algorithm>
#include <numeric>

#include "ir/operand_permutation.h"

namespace memplan {
namespace {

// The Transpose's perm (its default: the axes reversed), when it is a permutation of `rank` axes.
std::optional<std::vector<int64_t>> permutation(const Node& transpose, size_t rank) {
  std::vector<int64_t> perm = transpose.attr_ints("perm");
  if (!transpose.attr("perm")) {
    perm.resize(rank);
    std::iota(perm.rbegin(), perm.rend(), 0);
  }
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i)
    if (sorted[i] != static_cast<int64_t>(i)) return std::nullopt;
  if (perm.size() != rank) return std::nullopt;
  return perm;
}

bool static_plain(const Value* v) {
  return v && v->type.is_static() && !v->shape_varies && !v->dynamic && !v->is_constant() &&
         v->type.dtype == DType::Float32 && v->type.dims.size() >= 2;
}

}  // namespace

int fold_transposes_into_matmuls(Model& model) {
  return fold_nodes_away(*model.main, [main = model.main.get()](Graph& g, std::unordered_set<const Node*>& dead) {
    // The main graph only: a Loop's or If's body may have its shapes inferred again at run time by
    // ONNX's MatMul inference, which knows nothing of the permutation.
    if (&g != main) return;
    for (auto& n : g.nodes) {
      if (dead.count(n.get()) || n->op_type != "MatMul" || !n->domain.empty() || n->outputs.size() != 1 ||
          !n->outputs[0] || !static_plain(n->outputs[0]))
        continue;
      // A Linear layer (a constant B, a fused bias) reads A's batch as rows of one product, which a
      // permuted A cannot give: its Transpose stays.
      const bool linear = n->inputs.size() > 2 || (n->inputs.size() == 2 && n->inputs[1] && n->inputs[1]->is_constant());
      for (size_t i = linear ? 1 : 0; i < 2 && i < n->inputs.size(); ++i) {
        Value* t = n->inputs[i];
        Node* transpose = t ? t->producer : nullptr;
        if (!transpose || transpose->op_type != "Transpose" || !transpose->domain.empty() ||
            transpose->inputs.size() != 1 || dead.count(transpose) || sole_consumer(t) != n.get() ||
            !static_plain(t) || !static_plain(transpose->inputs[0]) || operand_permutation(*n, i))
          continue;
        const std::optional<std::vector<int64_t>> perm = permutation(*transpose, t->type.dims.size());
        if (!perm) continue;
        n->set_attr_ints(kPermuteAttrs[i], *perm);
        n->inputs[i] = transpose->inputs[0];
        transpose->outputs[0] = nullptr;
        g.release_value(t);
        dead.insert(transpose);
      }
    }
  });
}

}  // namespace memplan
