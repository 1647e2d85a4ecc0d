// TfIdfVectorizer: the TF, IDF and TFIDF weightings and skips by hand (ONNX's node tests cover TF
// only), and pools that do not cut into n-grams.
#include <catch2/catch.hpp>

#include <string>

#include "support/kernel_harness.h"

namespace {

using namespace memplan::test::kernel_names;

// Tokens [2, 6]; pool: unigrams 2, 3 (columns 0, 1), bigrams (5, 6), (2, 5) (columns 2, 3).
KernelCase tfidf(const std::string& mode, int64_t min_gram, int64_t max_gram, int64_t max_skip, Floats weights) {
  KernelCase c("TfIdfVectorizer", 9);
  c.input<int64_t>("X", INT64, {2, 6}, I64{2, 3, 5, 6, 2, 5,  //
                                           5, 2, 6, 6, 3, 3});
  c.output("Y", F32, {2, 4});
  c.attr("mode", mode);
  c.attr("min_gram_length", min_gram);
  c.attr("max_gram_length", max_gram);
  c.attr("max_skip_count", max_skip);
  c.attr("ngram_counts", Dims{0, 2});
  c.attr("ngram_indexes", Dims{0, 1, 2, 3});
  c.attr("pool_int64s", Dims{2, 3, 5, 6, 2, 5});
  if (!weights.empty()) c.attr("weights", weights);
  return c;
}

}  // namespace

TEST_CASE("TfIdfVectorizer counts n-grams by skip and weighs them by mode", "[kernels][text]") {
  SECTION("TF, unigrams and bigrams, no skip") {
    KernelCase c = tfidf("TF", 1, 2, 0, {});
    REQUIRE(c.run());
    // Row 0: 2 twice, 3 once; (5, 6) once, (2, 5) once. Row 1: 2 once, 3 twice; no bigram.
    CHECK(c.result_as<float>(0) == Floats{2, 1, 1, 1, 1, 2, 0, 0});
  }
  SECTION("TF, bigrams with skips up to 1: unigrams are not counted, pairs two apart are") {
    KernelCase c = tfidf("TF", 2, 2, 1, {});
    REQUIRE(c.run());
    // Row 0: adjacent pairs hold (5, 6) and (2, 5); pairs two apart, (2, 5) (3, 6) (5, 2) (6, 5),
    // (2, 5) once more. Row 1: no adjacent pair of the pool; two apart, (5, 6) once.
    CHECK(c.result_as<float>(0) == Floats{0, 0, 1, 2, 0, 0, 1, 0});
  }
  SECTION("IDF: the weight of each n-gram seen") {
    KernelCase c = tfidf("IDF", 1, 2, 0, {0.5f, 2.f, 4.f, 8.f});
    REQUIRE(c.run());
    CHECK(c.result_as<float>(0) == Floats{0.5f, 2, 4, 8, 0.5f, 2, 0, 0});
  }
  SECTION("TFIDF: counts times weights") {
    KernelCase c = tfidf("TFIDF", 1, 2, 0, {0.5f, 2.f, 4.f, 8.f});
    REQUIRE(c.run());
    CHECK(c.result_as<float>(0) == Floats{1, 2, 4, 8, 0.5f, 4, 0, 0});
  }
}

TEST_CASE("TfIdfVectorizer refuses a pool its ngram_counts do not cut into n-grams, naming the node", "[kernels][text]") {
  KernelCase c("TfIdfVectorizer", 9);
  c.input<int64_t>("X", INT64, {4}, I64{1, 2, 3, 4});
  c.output("Y", F32, {2});
  c.attr("mode", std::string("TF"));
  c.attr("min_gram_length", int64_t{1});
  c.attr("max_gram_length", int64_t{2});
  c.attr("max_skip_count", int64_t{0});
  c.attr("ngram_counts", Dims{0, 1});
  c.attr("ngram_indexes", Dims{0, 1});
  c.attr("pool_int64s", Dims{1, 2, 3, 4});  // one unigram, then 3 items: not whole bigrams
  CHECK_THROWS_WITH(c.run(), Catch::Contains("TfIdfVectorizer") && Catch::Contains("does not cut pool_int64s into 2-grams"));
}
