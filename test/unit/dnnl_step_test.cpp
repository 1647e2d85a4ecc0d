// DnnlStep: how a oneDNN primitive of memplan's elementwise kernels goes to the run's threads.
#include <catch2/catch.hpp>

#include <omp.h>

#include <cmath>
#include <vector>

#include "runtime/kernels/common/elementwise_common.h"
#include "runtime/run_threads.h"

using namespace memplan;
using namespace memplan::rt;
using namespace memplan::rt::elt;

namespace {

// A logistic eltwise over n floats, as UnaryKernel makes it.
DnnlStep logistic_step(DnnlContext& ctx, int64_t n, StepThreads threads, size_t& src, size_t& dst) {
  Shape s;
  s.rank = 1;
  s.dims[0] = n;
  const auto md = plain_md(s, dnnl::memory::data_type::f32);
  dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::eltwise_logistic, md, 0.f, 0.f);
  dnnl::eltwise_forward::primitive_desc pd(d, user_scratchpad_attr(), ctx.engine);
  DnnlStep step(ctx, pd, threads);
  src = step.arg(DNNL_ARG_SRC, md);
  dst = step.arg(DNNL_ARG_DST, md);
  return step;
}

}  // namespace

TEST_CASE("a streamed oneDNN step keeps to the calling thread below two chunks of operand bytes, and the run's thread "
          "count is the same after it", "[kernels][threads]") {
  DnnlContext ctx;
  const int64_t chunk_floats = static_cast<int64_t>(kParallelChunkBytes / sizeof(float));
  size_t src = 0, dst = 0;
  // An LSTM gate's [1, 512] and a tensor just below two chunks: the calling thread; two chunks: all.
  CHECK(logistic_step(ctx, 512, StepThreads::Streamed, src, dst).on_calling_thread());
  CHECK(logistic_step(ctx, 2 * chunk_floats - 1, StepThreads::Streamed, src, dst).on_calling_thread());
  CHECK_FALSE(logistic_step(ctx, 2 * chunk_floats, StepThreads::Streamed, src, dst).on_calling_thread());
  // A step whose work is not its operands' bytes keeps oneDNN's split whatever their size.
  CHECK_FALSE(logistic_step(ctx, 512, StepThreads::AsOneDnn, src, dst).on_calling_thread());

  for (const int64_t n : {int64_t{512}, 2 * chunk_floats + 16}) {
    INFO("n " << n);
    const DnnlStep step = logistic_step(ctx, n, StepThreads::Streamed, src, dst);
    DnnlStep::State state = step.make_state();
    std::vector<float> x(static_cast<size_t>(n)), y(static_cast<size_t>(n), -1.f);
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 17) * 0.5f - 4.f;
    const ThreadScope run(2);
    step.bind(state, src, x.data());
    step.bind(state, dst, y.data());
    step.execute(state, nullptr, nullptr);
    CHECK(omp_get_max_threads() == 2);  // the step's own count ended with it
    for (size_t i = 0; i < x.size(); ++i) REQUIRE(y[i] == Approx(1.0 / (1.0 + std::exp(-x[i]))).margin(1e-6));
  }
}
