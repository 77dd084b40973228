#include "kernels/cpu/conv2d.h"

#include <algorithm>

#include "kernels/cpu/activation_spans.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/threading.h"

namespace fuselab::kernels::cpu {
namespace {

// Calls f(row of col, input plane of channel c, r, s) for every (c, r, s), in parallel over c.
template <class F>
void for_each_patch_row(const Conv2dGeometry& g, F&& f) {
  const int64_t rs = g.kernel_h * g.kernel_w;
#pragma omp parallel for schedule(static) if (g.patch() * g.out_plane() > kParallelGrain)
  for (int64_t c = 0; c < g.in_channels; ++c) {
    for (int64_t r = 0; r < g.kernel_h; ++r) {
      for (int64_t s = 0; s < g.kernel_w; ++s) f((c * rs + r * g.kernel_w + s) * g.out_plane(), c * g.in_plane(), r, s);
    }
  }
}

// The input pixel that output (p, q) reads through kernel tap (r, s), or -1 in the padding.
inline int64_t input_index(const Conv2dGeometry& g, int64_t p, int64_t q, int64_t r, int64_t s) {
  const int64_t h = p * g.stride - g.padding + r, w = q * g.stride - g.padding + s;
  return h < 0 || h >= g.height || w < 0 || w >= g.width ? -1 : h * g.width + w;
}

// col[(c, r, s), (p, q)] = x[c, p*stride - pad + r, q*stride - pad + s], zero in the padding.
template <class T>
void im2col(const Conv2dGeometry& g, const T* x, T* col) {
  const int64_t out_h = g.out_h(), out_w = g.out_w();
  for_each_patch_row(g, [&](int64_t row, int64_t plane, int64_t r, int64_t s) {
    for (int64_t p = 0; p < out_h; ++p) {
      for (int64_t q = 0; q < out_w; ++q) {
        const int64_t i = input_index(g, p, q, r, s);
        col[row + p * out_w + q] = i < 0 ? T(0) : x[plane + i];
      }
    }
  });
}

// The adjoint of im2col: dx[c, h, w] = sum of the col entries that read it. Channels write
// disjoint planes, so the parallel loop over c needs no atomics.
template <class T>
void col2im(const Conv2dGeometry& g, const T* col, T* dx) {
  std::fill(dx, dx + g.in_channels * g.in_plane(), T(0));
  const int64_t out_h = g.out_h(), out_w = g.out_w();
  for_each_patch_row(g, [&](int64_t row, int64_t plane, int64_t r, int64_t s) {
    for (int64_t p = 0; p < out_h; ++p) {
      for (int64_t q = 0; q < out_w; ++q) {
        const int64_t i = input_index(g, p, q, r, s);
        if (i >= 0) dx[plane + i] += col[row + p * out_w + q];
      }
    }
  });
}

// y_n [K, PQ] = w [K, CRS] im2col(x_n) [CRS, PQ], then epilogue(n, y_n) while y_n is in cache.
template <class T, class Epilogue>
void forward_images(const Conv2dGeometry& g, const T* x, const T* w, T* y, T* col, Epilogue&& epilogue) {
  const int64_t in_image = g.in_channels * g.in_plane(), out_image = g.out_channels * g.out_plane();
  for (int64_t n = 0; n < g.batch; ++n) {
    im2col(g, x + n * in_image, col);
    gemm<T>(false, false, g.out_channels, g.out_plane(), g.patch(), T(1), w, g.patch(), col, g.out_plane(), T(0),
            y + n * out_image, g.out_plane());
    epilogue(n * out_image);
  }
}

}  // namespace

template <class T>
void conv2d_forward(const Conv2dGeometry& g, const T* x, const T* w, T* y, T* col) {
  forward_images(g, x, w, y, col, [](int64_t) {});
}

template <class T>
void conv2d_bias_activation_forward(const Conv2dGeometry& g, const T* x, const T* w, const T* b,
                                    bool has_activation, Activation act, T* pre, T* y, T* col) {
  const int64_t plane = g.out_plane();
  if (!has_activation) {  // pre would equal y: y = conv + b
    return forward_images(g, x, w, y, col, [&](int64_t image) {
      for (int64_t k = 0; k < g.out_channels; ++k) {
        T* yk = y + image + k * plane;
#pragma omp simd
        for (int64_t i = 0; i < plane; ++i) yk[i] += b[k];
      }
    });
  }
  with_activation(act, [&](auto math) {
    forward_images(g, x, w, y, col, [&](int64_t image) {
      for (int64_t k = 0; k < g.out_channels; ++k) {
        const int64_t at = image + k * plane;
        scalar_bias_activation_span<T, decltype(math)>(b[k], y + at, pre ? pre + at : nullptr, plane);
      }
    });
  });
}

template <class T>
void conv2d_backward_data(const Conv2dGeometry& g, const T* w, const T* dy, T* dx, T* col) {
  const int64_t in_image = g.in_channels * g.in_plane(), out_image = g.out_channels * g.out_plane();
  for (int64_t n = 0; n < g.batch; ++n) {
    // dcol [CRS, PQ] = w^T [CRS, K] dy_n [K, PQ]
    gemm<T>(true, false, g.patch(), g.out_plane(), g.out_channels, T(1), w, g.patch(), dy + n * out_image,
            g.out_plane(), T(0), col, g.out_plane());
    col2im(g, col, dx + n * in_image);
  }
}

template <class T>
void conv2d_backward_filter(const Conv2dGeometry& g, const T* x, const T* dy, T* dw, T* col) {
  const int64_t in_image = g.in_channels * g.in_plane(), out_image = g.out_channels * g.out_plane();
  for (int64_t n = 0; n < g.batch; ++n) {
    im2col(g, x + n * in_image, col);
    // dw [K, CRS] (+)= dy_n [K, PQ] col_n^T [PQ, CRS]
    gemm<T>(false, true, g.out_channels, g.patch(), g.out_plane(), T(1), dy + n * out_image, g.out_plane(), col,
            g.out_plane(), n == 0 ? T(0) : T(1), dw, g.patch());
  }
}

#define FUSELAB_INSTANTIATE(T)                                                                                 \
  template void conv2d_forward<T>(const Conv2dGeometry&, const T*, const T*, T*, T*);                          \
  template void conv2d_bias_activation_forward<T>(const Conv2dGeometry&, const T*, const T*, const T*, bool,   \
                                                  Activation, T*, T*, T*);                                     \
  template void conv2d_backward_data<T>(const Conv2dGeometry&, const T*, const T*, T*, T*);                    \
  template void conv2d_backward_filter<T>(const Conv2dGeometry&, const T*, const T*, T*, T*);
FUSELAB_INSTANTIATE(float)
FUSELAB_INSTANTIATE(double)
#undef FUSELAB_INSTANTIATE

}  // namespace fuselab::kernels::cpu
