// linalg/weights_gemv.h over [K, N] rows of B: where the output lies a few bytes past B's rows
// modulo a page, the sums go to a stack tile half a page off and are copied out. Both ways give
// the product's numbers, for every row count, across tiles and a partial last tile.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "runtime/kernels/linalg/weights_gemv.h"
#include "support/numeric.h"

using namespace memplan;
using namespace memplan::test;

namespace {

rt::TensorView view(void* data, std::initializer_list<int64_t> dims) {
  rt::TensorView v;
  v.data = static_cast<std::byte*>(data);
  v.dtype = DType::Float32;
  v.rank = static_cast<int>(dims.size());
  std::copy(dims.begin(), dims.end(), v.dims.begin());
  v.capacity = v.byte_size();
  return v;
}

}  // namespace

TEST_CASE("A weights-in-place gemv gives the product wherever its output lies against B's pages",
          "[kernels][weights_gemv]") {
  // 2500 columns: two 1024-column tiles and a partial one of 452 (not a multiple of 8); 37 rows of
  // B: four groups of eight and five left over.
  const int64_t k = 37, n = 2500;
  const int64_t m = GENERATE(int64_t{1}, int64_t{2}, int64_t{3}, int64_t{4});
  // Bytes from B's start to the output's, modulo a page: 0 and 48 (inside the window where loads
  // of B would wait for the sums' stores: the stack tile), 2048 and 3000 (the output itself).
  const uint64_t delta = GENERATE(uint64_t{0}, uint64_t{48}, uint64_t{2048}, uint64_t{3000});
  INFO(m << " rows of A, output " << delta << " bytes past B modulo 4096");
  const std::vector<float> a = random_floats(static_cast<size_t>(m * k), 7), b = random_floats(static_cast<size_t>(k * n), 8),
                           c = random_floats(static_cast<size_t>(n), 9);
  // B and Y in one page-aligned block: B at its start, Y at the first page past B plus delta.
  const uint64_t b_bytes = static_cast<uint64_t>(k * n) * sizeof(float), page = 4096;
  const uint64_t y_at = (b_bytes + page - 1) / page * page + delta;
  const uint64_t total = (y_at + static_cast<uint64_t>(m * n) * sizeof(float) + page - 1) / page * page;
  std::unique_ptr<std::byte, decltype(&std::free)> block(static_cast<std::byte*>(std::aligned_alloc(page, total)), &std::free);
  REQUIRE(block);
  std::memcpy(block.get(), b.data(), b_bytes);
  std::vector<float> a_copy = a, c_copy = c;

  rt::linalg::WeightsGemv shape;
  shape.m = m, shape.k = k, shape.n = n, shape.alpha = 0.5f, shape.beta = 2.f, shape.c_rows = 1, shape.c_cols = n;
  shape.steps = {EltwiseStep{EltwiseStep::Kind::Relu, 0.1f, 0.f}};
  const auto kernel = rt::linalg::make_weights_gemv(shape, "gemv");
  const rt::TensorView inputs[] = {view(a_copy.data(), {m, k}), view(block.get(), {k, n}), view(c_copy.data(), {n})};
  rt::TensorView outputs[] = {view(block.get() + y_at, {m, n})};
  kernel->run({inputs, outputs});

  std::vector<float> got(static_cast<size_t>(m * n)), want(got.size());
  std::memcpy(got.data(), block.get() + y_at, got.size() * sizeof(float));
  for (int64_t r = 0; r < m; ++r)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t q = 0; q < k; ++q)
        acc += static_cast<double>(a[static_cast<size_t>(r * k + q)]) * b[static_cast<size_t>(q * n + j)];
      const double v = 0.5 * acc + 2.0 * c[static_cast<size_t>(j)];
      want[static_cast<size_t>(r * n + j)] = static_cast<float>(v < 0 ? 0.1 * v : v);
    }
  require_close(got, want, scaled(1e-5f));
  // B, read in place, is as it was.
  CHECK(std::memcmp(block.get(), b.data(), b_bytes) == 0);
}
