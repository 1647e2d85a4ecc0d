// Numbers for tests: reproducible random inputs and the elementwise "close enough" check, with
// its tolerance spelled out (absolute, scaled by the wanted value, or both).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

namespace memplan::test {

// n floats drawn uniformly from [lo, hi) by std::mt19937(seed): a seed gives the same values in
// every test and on every run.
inline std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

// How close a result must come to what is wanted: |got - want| <= abs + rel * max(rel_floor, |want|).
struct Tolerance {
  double abs = 0;
  double rel = 0;
  double rel_floor = 0;

  double bound(double want) const { return abs + rel * std::max(rel_floor, std::fabs(want)); }
};

// |got - want| <= tol.
constexpr Tolerance absolute(double tol) { return Tolerance{tol, 0, 0}; }
// |got - want| <= tol * max(1, |want|): absolute up to 1, relative beyond.
constexpr Tolerance scaled(double tol) { return Tolerance{0, tol, 1}; }
// |got - want| <= abs + rel * |want| (numpy.isclose, ONNX's backend tests).
constexpr Tolerance abs_rel(double abs, double rel) { return Tolerance{abs, rel, 0}; }

// The same number of elements, then every element within `tol` of the wanted one (compared as
// doubles; REQUIRE, so it stops at the first that is not). A NaN wants a NaN, an infinity the same
// infinity.
template <typename T, typename W>
void require_close(const std::vector<T>& got, const std::vector<W>& want, const Tolerance& tol) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = static_cast<double>(got[i]), w = static_cast<double>(want[i]);
    INFO("element " << i << ": got " << g << ", want " << w);
    if (std::isnan(w)) {
      REQUIRE(std::isnan(g));
    } else if (std::isinf(w)) {
      REQUIRE(g == w);
    } else {
      REQUIRE(std::fabs(g - w) <= tol.bound(w));
    }
  }
}

// The wanted values written in place: require_close(got, {1, 2.5, 4}, tol).
template <typename T>
void require_close(const std::vector<T>& got, std::initializer_list<double> want, const Tolerance& tol) {
  require_close(got, std::vector<double>(want), tol);
}

// require_close with a tolerance that a test file states once, for the calls that name none:
//   const memplan::test::RequireClose require_close{memplan::test::scaled(1e-5f)};
//   require_close(got, want);                 // scaled(1e-5f)
//   require_close(got, want, absolute(0));    // this call's own
class RequireClose {
 public:
  constexpr explicit RequireClose(Tolerance tol) : tol_(tol) {}

  template <typename T, typename W>
  void operator()(const std::vector<T>& got, const std::vector<W>& want) const {
    require_close(got, want, tol_);
  }
  template <typename T>
  void operator()(const std::vector<T>& got, std::initializer_list<double> want) const {
    require_close(got, want, tol_);
  }
  template <typename T, typename W>
  void operator()(const std::vector<T>& got, const std::vector<W>& want, const Tolerance& tol) const {
    require_close(got, want, tol);
  }
  template <typename T>
  void operator()(const std::vector<T>& got, std::initializer_list<double> want, const Tolerance& tol) const {
    require_close(got, want, tol);
  }

 private:
  Tolerance tol_;
};

}  // namespace memplan::test
