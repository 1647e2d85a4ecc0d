// LSTM and GRU kernels (oneDNN) against a naive loop written from the ONNX equations.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "memplan/error.h"
#include "support/kernel_harness.h"

namespace {

using namespace memplan::test::kernel_names;

const RequireClose require_close{absolute(2e-5f)};


float sigmoid(float x) { return 1.f / (1.f + std::exp(-x)); }

struct Rnn {
  bool lstm = true;
  bool lbr = false;
  std::string direction = "forward";
  int64_t T = 3, N = 2, I = 3, H = 4;
  bool bias = true, initial = true;
  Floats X, W, R, B, h0, c0;

  int64_t D() const { return direction == "bidirectional" ? 2 : 1; }
  int64_t G() const { return lstm ? 4 : 3; }
  void fill(uint32_t seed) {
    X = random_floats(static_cast<size_t>(T * N * I), seed, -0.6f, 0.6f);
    W = random_floats(static_cast<size_t>(D() * G() * H * I), seed + 1, -0.6f, 0.6f);
    R = random_floats(static_cast<size_t>(D() * G() * H * H), seed + 2, -0.6f, 0.6f);
    B = random_floats(static_cast<size_t>(D() * 2 * G() * H), seed + 3, -0.6f, 0.6f);
    h0 = random_floats(static_cast<size_t>(D() * N * H), seed + 4, -0.6f, 0.6f);
    c0 = random_floats(static_cast<size_t>(D() * N * H), seed + 5, -0.6f, 0.6f);
  }
};

struct Outputs {
  Floats Y, Yh, Yc;
};

// The ONNX equations, one direction at a time, one batch row at a time.
Outputs naive(const Rnn& r) {
  const int64_t T = r.T, N = r.N, I = r.I, H = r.H, D = r.D(), G = r.G();
  Outputs o;
  o.Y.assign(static_cast<size_t>(T * D * N * H), 0.f);
  o.Yh.assign(static_cast<size_t>(D * N * H), 0.f);
  o.Yc.assign(static_cast<size_t>(D * N * H), 0.f);
  for (int64_t d = 0; d < D; ++d) {
    const bool reverse = r.direction == "reverse" || d == 1;
    auto w = [&](int64_t row, int64_t i) { return r.W[static_cast<size_t>((d * G * H + row) * I + i)]; };
    auto rr = [&](int64_t row, int64_t k) { return r.R[static_cast<size_t>((d * G * H + row) * H + k)]; };
    auto wb = [&](int64_t row) { return r.bias ? r.B[static_cast<size_t>(d * 2 * G * H + row)] : 0.f; };
    auto rb = [&](int64_t row) { return r.bias ? r.B[static_cast<size_t>(d * 2 * G * H + G * H + row)] : 0.f; };
    Floats h(static_cast<size_t>(N * H), 0.f), c(static_cast<size_t>(N * H), 0.f);
    if (r.initial)
      for (int64_t k = 0; k < N * H; ++k) {
        h[static_cast<size_t>(k)] = r.h0[static_cast<size_t>(d * N * H + k)];
        c[static_cast<size_t>(k)] = r.c0[static_cast<size_t>(d * N * H + k)];
      }
    for (int64_t step = 0; step < T; ++step) {
      const int64_t t = reverse ? T - 1 - step : step;
      const Floats hp = h;
      for (int64_t n = 0; n < N; ++n) {
        const float* x = &r.X[static_cast<size_t>((t * N + n) * I)];
        const float* hprev = &hp[static_cast<size_t>(n * H)];
        auto xw = [&](int64_t row) {
          float s = 0;
          for (int64_t i = 0; i < I; ++i) s += x[i] * w(row, i);
          return s;
        };
        auto hr = [&](int64_t row, const float* v) {
          float s = 0;
          for (int64_t k = 0; k < H; ++k) s += v[k] * rr(row, k);
          return s;
        };
        if (r.lstm) {
          for (int64_t j = 0; j < H; ++j) {
            auto gate = [&](int64_t g) { return xw(g * H + j) + hr(g * H + j, hprev) + wb(g * H + j) + rb(g * H + j); };
            const float ig = sigmoid(gate(0)), og = sigmoid(gate(1)), fg = sigmoid(gate(2)), cg = std::tanh(gate(3));
            float& cell = c[static_cast<size_t>(n * H + j)];
            cell = fg * cell + ig * cg;
            h[static_cast<size_t>(n * H + j)] = og * std::tanh(cell);
          }
        } else {
          Floats z(static_cast<size_t>(H)), rg(static_cast<size_t>(H)), rh(static_cast<size_t>(H));
          for (int64_t j = 0; j < H; ++j) {
            z[static_cast<size_t>(j)] = sigmoid(xw(j) + hr(j, hprev) + wb(j) + rb(j));
            rg[static_cast<size_t>(j)] = sigmoid(xw(H + j) + hr(H + j, hprev) + wb(H + j) + rb(H + j));
            rh[static_cast<size_t>(j)] = rg[static_cast<size_t>(j)] * hprev[j];
          }
          for (int64_t j = 0; j < H; ++j) {
            const int64_t row = 2 * H + j;
            const float pre = r.lbr ? xw(row) + rg[static_cast<size_t>(j)] * (hr(row, hprev) + rb(row)) + wb(row)
                                    : xw(row) + hr(row, rh.data()) + rb(row) + wb(row);
            const float zz = z[static_cast<size_t>(j)];
            h[static_cast<size_t>(n * H + j)] = (1 - zz) * std::tanh(pre) + zz * hprev[j];
          }
        }
      }
      for (int64_t k = 0; k < N * H; ++k) o.Y[static_cast<size_t>((t * D + d) * N * H + k)] = h[static_cast<size_t>(k)];
    }
    for (int64_t k = 0; k < N * H; ++k) {
      o.Yh[static_cast<size_t>(d * N * H + k)] = h[static_cast<size_t>(k)];
      o.Yc[static_cast<size_t>(d * N * H + k)] = c[static_cast<size_t>(k)];
    }
  }
  return o;
}

// Builds the node: X, W, R, B, sequence_lens, initial_h, initial_c and outputs Y, Y_h, Y_c.
void build(KernelCase& k, const Rnn& r, size_t outputs = 3) {
  const int64_t D = r.D(), G = r.G();
  k.input("X", F32, {r.T, r.N, r.I}, r.X);
  k.input("W", F32, {D, G * r.H, r.I}, r.W, true);
  k.input("R", F32, {D, G * r.H, r.H}, r.R, true);
  if (r.bias) k.input("B", F32, {D, 2 * G * r.H}, r.B, true);
  else k.omitted_input();
  k.omitted_input();  // sequence_lens
  if (r.initial) {
    k.input("initial_h", F32, {D, r.N, r.H}, r.h0);
    if (r.lstm) k.input("initial_c", F32, {D, r.N, r.H}, r.c0);
  }
  k.attr("hidden_size", r.H);
  k.attr("direction", r.direction);
  if (!r.lstm) k.attr("linear_before_reset", int64_t{r.lbr ? 1 : 0});
  k.output("Y", F32, {r.T, D, r.N, r.H});
  if (outputs > 1) k.output("Y_h", F32, {D, r.N, r.H});
  if (outputs > 2 && r.lstm) k.output("Y_c", F32, {D, r.N, r.H});
}

void check(const Rnn& r) {
  KernelCase k(r.lstm ? "LSTM" : "GRU", 14);
  build(k, r);
  REQUIRE(k.run());
  const Outputs want = naive(r);
  require_close(k.result_as<float>(0), want.Y);
  require_close(k.result_as<float>(1), want.Yh);
  if (r.lstm) require_close(k.result_as<float>(2), want.Yc);
}

}  // namespace

TEST_CASE("LSTM matches the ONNX equations in every direction", "[kernels][elementwise][rnn]") {
  const std::string direction = GENERATE(std::string("forward"), std::string("reverse"), std::string("bidirectional"));
  INFO(direction);
  Rnn r;
  r.direction = direction;
  r.fill(11);
  check(r);
  // No bias, no initial states.
  r.bias = false;
  r.initial = false;
  check(r);
}

TEST_CASE("GRU matches the ONNX equations with and without linear_before_reset", "[kernels][elementwise][rnn]") {
  const std::string direction = GENERATE(std::string("forward"), std::string("reverse"), std::string("bidirectional"));
  const bool lbr = GENERATE(false, true);
  INFO(direction << (lbr ? ", linear_before_reset" : ""));
  Rnn r;
  r.lstm = false;
  r.lbr = lbr;
  r.direction = direction;
  r.T = 4;
  r.N = 3;
  r.H = 5;
  r.fill(23);
  check(r);
  r.initial = false;
  r.bias = false;
  check(r);
}

TEST_CASE("LSTM with only the Y output, and with full-length sequence_lens", "[kernels][elementwise][rnn]") {
  Rnn r;
  r.direction = "bidirectional";
  r.fill(5);
  KernelCase k("LSTM", 14);
  build(k, r, 1);
  REQUIRE(k.run());
  require_close(k.result_as<float>(0), naive(r).Y);

  KernelCase s("GRU", 14);
  Rnn g;
  g.lstm = false;
  g.fill(6);
  s.input("X", F32, {g.T, g.N, g.I}, g.X);
  s.input("W", F32, {1, 3 * g.H, g.I}, g.W, true);
  s.input("R", F32, {1, 3 * g.H, g.H}, g.R, true);
  s.input("B", F32, {1, 6 * g.H}, g.B, true);
  s.input("sequence_lens", DType::Int32, {g.N}, std::vector<int32_t>(static_cast<size_t>(g.N), 3));
  s.input("initial_h", F32, {1, g.N, g.H}, g.h0);
  s.attr("hidden_size", g.H);
  s.output("Y", F32, {g.T, 1, g.N, g.H});
  s.output("Y_h", F32, {1, g.N, g.H});
  REQUIRE(s.run());
  const Outputs want = naive(g);
  require_close(s.result_as<float>(0), want.Y);
  require_close(s.result_as<float>(1), want.Yh);
}

TEST_CASE("LSTM and GRU reject what oneDNN cannot run", "[kernels][elementwise][rnn]") {
  Rnn r;
  r.fill(3);
  SECTION("clip") {
    KernelCase k("LSTM", 14);
    build(k, r);
    k.attr("clip", 1.f);
    require_error(k, ErrorKind::Unsupported, {"LSTM node", "clip"});
  }
  SECTION("activations") {
    KernelCase k("LSTM", 14);
    build(k, r);
    k.node().attributes.push_back(memplan::Attribute{});
    k.node().attributes.back().name = "activations";
    k.node().attributes.back().kind = memplan::Attribute::Kind::Strings;
    k.node().attributes.back().strings = {"Sigmoid", "Relu", "Tanh"};
    require_error(k, ErrorKind::Unsupported, {"LSTM node", "activation 'Relu'"});
  }
  SECTION("short sequences") {
    KernelCase k("GRU", 14);
    Rnn g;
    g.lstm = false;
    g.fill(4);
    k.input("X", F32, {g.T, g.N, g.I}, g.X);
    k.input("W", F32, {1, 3 * g.H, g.I}, g.W, true);
    k.input("R", F32, {1, 3 * g.H, g.H}, g.R, true);
    k.omitted_input();
    k.input("sequence_lens", DType::Int32, {g.N}, std::vector<int32_t>{3, 2}, true);
    k.output("Y", F32, {g.T, 1, g.N, g.H});
    require_error(k, ErrorKind::Unsupported, {"GRU node", "sequence_lens[1] is 2"});
  }
}
