// The one-line error for a model memplan cannot run names a few nodes and counts the rest.
#include <catch2/catch.hpp>

#include "runtime/kernel_selection.h"

TEST_CASE("the unsupported-model summary names the first five nodes and counts the rest", "[kernels]") {
  memplan::KernelSelection k;
  for (int i = 0; i < 7; ++i) k.unsupported.push_back("Conv node 'n" + std::to_string(i) + "': float16");
  const std::string s = k.unsupported_summary();
  for (int i = 0; i < 5; ++i) CHECK(s.find("'n" + std::to_string(i) + "'") != std::string::npos);
  CHECK(s.find("'n5'") == std::string::npos);
  CHECK(s.size() > 16);
  CHECK(s.substr(s.size() - 16) == "and 2 more nodes");
  k.unsupported.resize(2);
  CHECK(k.unsupported_summary() == "Conv node 'n0': float16; Conv node 'n1': float16");
}
