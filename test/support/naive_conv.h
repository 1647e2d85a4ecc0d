// The naive 2-D convolution (and transposed convolution) the kernel tests compare oneDNN's with (double accumulation).
#pragma once

#include <cstdint>
#include <vector>

namespace memplan::test {

struct Conv2d {
  int64_t group = 1;
  std::vector<int64_t> strides{1, 1}, dilations{1, 1}, pads{0, 0, 0, 0};  // pads: top, left, bottom, right
};

// x [N, C, H, W], w [M, C/g, KH, KW], b [M] or empty; returns y [N, M, OH, OW] (oh/ow given).
inline std::vector<float> naive_conv2d(const std::vector<float>& x, const std::vector<int64_t>& xd,
                                       const std::vector<float>& w, const std::vector<int64_t>& wd,
                                       const std::vector<float>& b, const Conv2d& p, int64_t oh, int64_t ow) {
  const int64_t n = xd[0], c = xd[1], h = xd[2], wi = xd[3], m = wd[0], cg = wd[1], kh = wd[2], kw = wd[3];
  const int64_t mg = m / p.group;
  std::vector<float> y(static_cast<size_t>(n * m * oh * ow), 0.f);
  for (int64_t in = 0; in < n; ++in)
    for (int64_t om = 0; om < m; ++om) {
      const int64_t g = om / mg;
      for (int64_t y0 = 0; y0 < oh; ++y0)
        for (int64_t x0 = 0; x0 < ow; ++x0) {
          double acc = b.empty() ? 0.0 : b[static_cast<size_t>(om)];
          for (int64_t ic = 0; ic < cg; ++ic)
            for (int64_t ky = 0; ky < kh; ++ky)
              for (int64_t kx = 0; kx < kw; ++kx) {
                const int64_t iy = y0 * p.strides[0] - p.pads[0] + ky * p.dilations[0];
                const int64_t ix = x0 * p.strides[1] - p.pads[1] + kx * p.dilations[1];
                if (iy < 0 || iy >= h || ix < 0 || ix >= wi) continue;
                const int64_t cc = g * cg + ic;
                acc += static_cast<double>(x[static_cast<size_t>(((in * c + cc) * h + iy) * wi + ix)]) *
                       w[static_cast<size_t>(((om * cg + ic) * kh + ky) * kw + kx)];
              }
          y[static_cast<size_t>(((in * m + om) * oh + y0) * ow + x0)] = static_cast<float>(acc);
        }
    }
  return y;
}

// x [N, C, H, W], w [C, M/g, KH, KW] (ONNX ConvTranspose layout); scatter form.
inline std::vector<float> naive_conv_transpose2d(const std::vector<float>& x, const std::vector<int64_t>& xd,
                                                 const std::vector<float>& w, const std::vector<int64_t>& wd,
                                                 const std::vector<float>& b, const Conv2d& p, int64_t oh, int64_t ow) {
  const int64_t n = xd[0], c = xd[1], h = xd[2], wi = xd[3], mg = wd[1], kh = wd[2], kw = wd[3];
  const int64_t cg = c / p.group, m = mg * p.group;
  std::vector<float> y(static_cast<size_t>(n * m * oh * ow), 0.f);
  for (int64_t in = 0; in < n; ++in)
    for (int64_t om = 0; om < m; ++om)
      for (int64_t i = 0; i < oh * ow; ++i)
        y[static_cast<size_t>((in * m + om) * oh * ow + i)] = b.empty() ? 0.f : b[static_cast<size_t>(om)];
  for (int64_t in = 0; in < n; ++in)
    for (int64_t ic = 0; ic < c; ++ic) {
      const int64_t g = ic / cg;
      for (int64_t iy = 0; iy < h; ++iy)
        for (int64_t ix = 0; ix < wi; ++ix)
          for (int64_t o = 0; o < mg; ++o)
            for (int64_t ky = 0; ky < kh; ++ky)
              for (int64_t kx = 0; kx < kw; ++kx) {
                const int64_t y0 = iy * p.strides[0] - p.pads[0] + ky * p.dilations[0];
                const int64_t x0 = ix * p.strides[1] - p.pads[1] + kx * p.dilations[1];
                if (y0 < 0 || y0 >= oh || x0 < 0 || x0 >= ow) continue;
                const int64_t om = g * mg + o;
                y[static_cast<size_t>(((in * m + om) * oh + y0) * ow + x0)] +=
                    x[static_cast<size_t>(((in * c + ic) * h + iy) * wi + ix)] *
                    w[static_cast<size_t>(((ic * mg + o) * kh + ky) * kw + kx)];
              }
    }
  return y;
}

}  // namespace memplan::test
