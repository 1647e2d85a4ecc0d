// TfIdfVectorizer (opset 9) on int32 or int64 token ids, [C] or [B, C]: for each row, how often
// each n-gram of the pool occurs, n from min_gram_length to max_gram_length, its items taken
// 1 to max_skip_count + 1 positions apart (a unigram is counted once, whatever the skip). The
// pool's n-grams go into a prefix tree when the kernel is made; a run walks it from every start
// position and skip, and writes, per the mode, the counts (TF), the weights of the n-grams seen
// (IDF; 1 without weights) or counts times weights (TFIDF) at each n-gram's ngram_indexes column.
// As ONNX's reference computes it: n-gram ids count every pool entry, also those of sizes
// outside [min_gram_length, max_gram_length], which are left out of the tree.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "runtime/kernels/common/kernel_common.h"
#include "runtime/kernels/common/shape_common.h"
#include "runtime/kernels/text/factories.h"

namespace memplan::rt::text {
namespace {

enum class Weighting { TF, IDF, TFIDF };

// The pool's n-grams as a prefix tree: node 0 is the root; an edge (node, token) leads to a
// child, whose id (1-based, 0 for none) names the n-gram ending there.
struct NgramTree {
  std::map<std::pair<int32_t, int64_t>, int32_t> edges;
  std::vector<int32_t> id{0};
  std::vector<bool> has_children{false};

  int32_t child(int32_t node, int64_t token) const {
    auto it = edges.find({node, token});
    return it == edges.end() ? -1 : it->second;
  }
  int32_t add(int32_t node, int64_t token) {
    const auto [it, fresh] = edges.try_emplace({node, token}, static_cast<int32_t>(id.size()));
    if (fresh) {
      id.push_back(0);
      has_children.push_back(false);
      has_children[static_cast<size_t>(node)] = true;
    }
    return it->second;
  }
};

class TfIdfKernel final : public Kernel {
 public:
  TfIdfKernel(std::string where, NgramTree tree, std::vector<int64_t> columns, int64_t width, int64_t min_gram,
              int64_t max_gram, int64_t max_skip, Weighting weighting, std::vector<float> weights)
      : where_(std::move(where)), tree_(std::move(tree)), columns_(std::move(columns)), width_(width),
        min_gram_(min_gram), max_gram_(max_gram), max_skip_(max_skip), weighting_(weighting),
        weights_(std::move(weights)) {}

  void run(const KernelArgs& a) override {
    const TensorView& x = a.inputs[0];
    TensorView& y = a.outputs[0];
    if (x.rank > 2) shape::fail_at(where_, "the input must be [C] or [B, C]");
    const int64_t rows = x.rank == 2 ? x.dims[0] : 1, length = x.rank == 0 ? 1 : x.dims[x.rank - 1];
    if (x.rank == 2) {
      const int64_t dims[2] = {rows, width_};
      shape::set_shape(y, 2, dims, where_);
    } else {
      shape::set_shape(y, 1, &width_, where_);
    }
    float* out = y.as<float>();
    std::fill(out, out + rows * width_, 0.f);
    for (int64_t r = 0; r < rows; ++r) {
      float* counts = out + r * width_;
      if (x.dtype == DType::Int32) count_row(x.as<const int32_t>() + r * length, length, counts);
      else count_row(x.as<const int64_t>() + r * length, length, counts);
      weigh(counts);
    }
  }

 private:
  template <typename T>
  void count_row(const T* tokens, int64_t length, float* counts) const {
    int64_t first_size = min_gram_;
    for (int64_t skip = 1; skip <= max_skip_ + 1; ++skip) {
      for (int64_t start = 0; start < length; ++start) {
        if (start + skip * (first_size - 1) >= length) break;  // no n-gram of any size fits from here
        int32_t node = 0;
        for (int64_t size = 1, at = start; tree_.has_children[static_cast<size_t>(node)] && size <= max_gram_ && at < length;
             ++size, at += skip) {
          node = tree_.child(node, static_cast<int64_t>(tokens[at]));
          if (node < 0) break;
          const int32_t id = tree_.id[static_cast<size_t>(node)];
          if (size >= first_size && id != 0) counts[columns_[static_cast<size_t>(id - 1)]] += 1.f;
        }
      }
      if (first_size == 1 && ++first_size > max_gram_) break;  // unigrams once, whatever the skip
    }
  }

  void weigh(float* counts) const {
    if (weighting_ == Weighting::TF) return;
    for (int64_t i = 0; i < width_; ++i) {
      const float w = weights_.empty() ? 1.f : weights_[static_cast<size_t>(i)];
      counts[i] = weighting_ == Weighting::IDF ? (counts[i] > 0 ? w : 0.f) : counts[i] * w;
    }
  }

  std::string where_;
  NgramTree tree_;
  std::vector<int64_t> columns_;  // ngram_indexes: the output column of n-gram id - 1
  int64_t width_, min_gram_, max_gram_, max_skip_;
  Weighting weighting_;
  std::vector<float> weights_;
};

}  // namespace

std::unique_ptr<Kernel> make_tfidf_vectorizer(const Node& n, const KernelEnv& env) {
  const std::string where = check_arity(n, env, 1, 1);
  const Value* x = input_at(n, 0);
  if (x->type.dtype != DType::Int32 && x->type.dtype != DType::Int64)
    shape::unsupported_at(where, "input of " + dtype_name(x->type.dtype) + " is not supported (int32 or int64 token ids)");
  if (n.attr("pool_strings")) shape::unsupported_at(where, "pool_strings is not supported (string tensors are not)");
  const std::string mode = n.attr_string("mode", "");
  const Weighting weighting = mode == "TF" ? Weighting::TF : mode == "IDF" ? Weighting::IDF : Weighting::TFIDF;
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF") shape::fail_at(where, "mode '" + mode + "' is not TF, IDF or TFIDF");
  const int64_t min_gram = n.attr_int("min_gram_length", 0), max_gram = n.attr_int("max_gram_length", 0),
                max_skip = n.attr_int("max_skip_count", 0);
  if (min_gram < 1 || max_gram < min_gram || max_gram > 64 || max_skip < 0 || max_skip > (int64_t{1} << 20))
    shape::fail_at(where, "min_gram_length " + std::to_string(min_gram) + ", max_gram_length " + std::to_string(max_gram) +
                              " and max_skip_count " + std::to_string(max_skip) + " do not make a range of n-gram sizes");
  const std::vector<int64_t> pool = n.attr_ints("pool_int64s"), starts = n.attr_ints("ngram_counts"),
                             columns = n.attr_ints("ngram_indexes");
  if (columns.empty()) shape::fail_at(where, "ngram_indexes is empty");
  for (int64_t c : columns)
    if (c < 0 || c > (int64_t{1} << 31)) shape::fail_at(where, "ngram_indexes holds " + std::to_string(c));
  const int64_t width = *std::max_element(columns.begin(), columns.end()) + 1;
  std::vector<float> weights;
  if (const Attribute* w = n.attr("weights")) weights = w->floats;
  if (!weights.empty() && static_cast<int64_t>(weights.size()) < width)
    shape::fail_at(where, "weights has " + std::to_string(weights.size()) + " values for " + std::to_string(width) + " columns");
  // The tree: n-grams of size k + 1 are pool[starts[k] .. starts[k + 1]) in runs of k + 1.
  NgramTree tree;
  int32_t next_id = 1;
  for (size_t k = 0; k < starts.size(); ++k) {
    const int64_t size = static_cast<int64_t>(k) + 1, begin = starts[k];
    const int64_t end = k + 1 < starts.size() ? starts[k + 1] : static_cast<int64_t>(pool.size());
    if (begin < 0 || end < begin || end > static_cast<int64_t>(pool.size()) || (end - begin) % size != 0)
      shape::fail_at(where, "ngram_counts " + std::to_string(begin) + ".." + std::to_string(end) +
                                " does not cut pool_int64s into " + std::to_string(size) + "-grams");
    const int64_t grams = (end - begin) / size;
    if (grams > static_cast<int64_t>(columns.size()) - (next_id - 1))
      shape::fail_at(where, "ngram_indexes has fewer entries than the pool has n-grams");
    if (size < min_gram || size > max_gram) {
      next_id += static_cast<int32_t>(grams);
      continue;
    }
    for (int64_t g = 0; g < grams; ++g) {
      int32_t node = 0;
      for (int64_t i = 0; i < size; ++i) node = tree.add(node, pool[static_cast<size_t>(begin + g * size + i)]);
      tree.id[static_cast<size_t>(node)] = next_id++;
    }
  }
  return std::make_unique<TfIdfKernel>(where, std::move(tree), columns, width, min_gram, max_gram, max_skip, weighting,
                                       std::move(weights));
}

}  // namespace memplan::rt::text
