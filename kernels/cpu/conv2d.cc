// The CPU bodies of kernels/conv2d.h: oneDNN's convolution (kernels/cpu/onednn_conv.h) for float32
// where the GEMM library is oneDNN and the geometry pays (onednn_convolution), else im2col, then
// one GEMM per image.
#include "kernels/conv2d.h"

#include <algorithm>
#include <type_traits>

#include "kernels/cpu/activation_spans.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/onednn_conv.h"
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

// The output columns q whose tap s reads inside the image, [first, last): the pixel column
// w = q stride - pad + s must lie in [0, W). Columns outside read the zero padding.
struct ColumnSpan {
  int64_t first, last;
};
inline ColumnSpan columns_inside(const Conv2dGeometry& g, int64_t s) {
  const int64_t low = g.padding - s;                 // q stride >= low
  const int64_t high = g.width - 1 + g.padding - s;  // q stride <= high
  const int64_t last = high < 0 ? 0 : std::min(g.out_w(), high / g.stride + 1);
  const int64_t first = std::min(last, low <= 0 ? int64_t(0) : (low + g.stride - 1) / g.stride);
  return {first, last};
}

// Calls f(col offset of output row p, whether the row reads inside the image, x offset) for every
// output row p of patch row (c, r, s); x offset + q stride is the pixel column q reads (the offset
// alone may point before the plane: only columns in columns_inside are read).
template <class F>
void for_each_output_row(const Conv2dGeometry& g, int64_t row, int64_t plane, int64_t r, int64_t s, F&& f) {
  for (int64_t p = 0; p < g.out_h(); ++p) {
    const int64_t h = p * g.stride - g.padding + r;
    const bool inside = h >= 0 && h < g.height;
    f(row + p * g.out_w(), inside, plane + h * g.width - g.padding + s);
  }
}

// col[(c, r, s), (p, q)] = x[c, p*stride - pad + r, q*stride - pad + s], zero in the padding.
template <class T>
void im2col(const Conv2dGeometry& g, const T* x, T* col) {
  const int64_t out_w = g.out_w(), stride = g.stride;
  for_each_patch_row(g, [&](int64_t row, int64_t plane, int64_t r, int64_t s) {
    const ColumnSpan q = columns_inside(g, s);
    for_each_output_row(g, row, plane, r, s, [&](int64_t at, bool inside, int64_t from) {
      T* out = col + at;
      if (!inside) return std::fill(out, out + out_w, T(0));
      const T* pixels = x;
      std::fill(out, out + q.first, T(0));
#pragma omp simd
      for (int64_t j = q.first; j < q.last; ++j) out[j] = pixels[from + j * stride];
      std::fill(out + q.last, out + out_w, T(0));
    });
  });
}

// The adjoint of im2col: dx[c, h, w] = sum of the col entries that read it. Channels write
// disjoint planes, so the parallel loop over c needs no atomics.
template <class T>
void col2im(const Conv2dGeometry& g, const T* col, T* dx) {
  std::fill(dx, dx + g.in_channels * g.in_plane(), T(0));
  const int64_t stride = g.stride;
  for_each_patch_row(g, [&](int64_t row, int64_t plane, int64_t r, int64_t s) {
    const ColumnSpan q = columns_inside(g, s);
    for_each_output_row(g, row, plane, r, s, [&](int64_t at, bool inside, int64_t to) {
      if (!inside) return;
      const T* in = col + at;
      T* pixels = dx;
#pragma omp simd
      for (int64_t j = q.first; j < q.last; ++j) pixels[to + j * stride] += in[j];
    });
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

// Whether a convolution runs on oneDNN: float32 unless FUSELAB_CPU_GEMM picks OpenBLAS, with a kernel
// wider than 1x1 over at least 16 input channels. There oneDNN's blocked direct
// convolution ran each pass 1.2-1.9x faster than im2col + OpenBLAS, reorders included; with 3
// input channels (no channel block) or a 1x1 kernel (im2col is a copy, the GEMM all the work) it
// ran 1.5-2x slower (bench/RESULTS.md, "oneDNN convolutions"). The bound of 16, oneDNN's channel
// block on AVX-512, lies between the 3 and 17 channels measured. float64 has no oneDNN convolution.
// A geometry oneDNN has no fast implementation for returns false from the onednn_conv_* calls and
// runs im2col + GEMM.
template <class T>
bool onednn_convolution(const Conv2dGeometry& g) {
  if constexpr (std::is_same_v<T, float>) {
    return onednn_convolutions() && g.kernel_h * g.kernel_w > 1 && g.in_channels >= 16;
  } else {
    return false;
  }
}

// y = act(pre) in one pass.
template <class T>
void activation_pass(Activation act, const T* pre, T* y, int64_t n) {
  with_activation(act, [&](auto math) {
    parallel_spans(n, [&](int64_t begin, int64_t end) {
      activation_span<T, decltype(math)>(pre + begin, y + begin, end - begin);
    });
  });
}

// The fused forward on oneDNN: bias and activation as post-ops, or, where pre is kept, the
// convolution and bias into pre and then y = act(pre). False where oneDNN cannot run it.
inline bool onednn_bias_activation(const Conv2dBiasActivationForward<float>& k, KernelContext& ctx) {
  if (!k.pre) return onednn_conv_forward(k.g, k.x, k.w, k.b, k.act, k.y, ctx);
  if (!onednn_conv_forward(k.g, k.x, k.w, k.b, Activation::None, k.pre, ctx)) return false;
  activation_pass(k.act, k.pre, k.y, k.g.batch * k.g.out_channels * k.g.out_plane());
  return true;
}

}  // namespace

}  // namespace fuselab::kernels::cpu

namespace fuselab::kernels {
using namespace cpu;

template <class T>
void Conv2dForward<T>::cpu(KernelContext& ctx) const {
  if constexpr (std::is_same_v<T, float>) {
    if (onednn_convolution<T>(g) && onednn_conv_forward(g, x, w, nullptr, Activation::None, y, ctx)) return;
  }
  forward_images(g, x, w, y, ctx.scratch<T>(g.patch() * g.out_plane()), [](int64_t) {});
}

template <class T>
void Conv2dBiasActivationForward<T>::cpu(KernelContext& ctx) const {
  if constexpr (std::is_same_v<T, float>) {
    if (onednn_convolution<T>(g) && onednn_bias_activation(*this, ctx)) return;
  }
  T* col = ctx.scratch<T>(g.patch() * g.out_plane());
  const int64_t plane = g.out_plane();
  if (act == Activation::None) {  // pre would equal y: y = conv + b
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
void Conv2dBackwardData<T>::cpu(KernelContext& ctx) const {
  if constexpr (std::is_same_v<T, float>) {
    if (onednn_convolution<T>(g) && onednn_conv_backward_data(g, w, dy, dx, ctx)) return;
  }
  T* col = ctx.scratch<T>(g.patch() * g.out_plane());
  const int64_t in_image = g.in_channels * g.in_plane(), out_image = g.out_channels * g.out_plane();
  for (int64_t n = 0; n < g.batch; ++n) {
    // dcol [CRS, PQ] = w^T [CRS, K] dy_n [K, PQ]
    gemm<T>(true, false, g.patch(), g.out_plane(), g.out_channels, T(1), w, g.patch(), dy + n * out_image,
            g.out_plane(), T(0), col, g.out_plane());
    col2im(g, col, dx + n * in_image);
  }
}

template <class T>
void Conv2dBackwardFilter<T>::cpu(KernelContext& ctx) const {
  if constexpr (std::is_same_v<T, float>) {
    if (onednn_convolution<T>(g) && onednn_conv_backward_weights(g, x, dy, dw, ctx)) return;
  }
  T* col = ctx.scratch<T>(g.patch() * g.out_plane());
  const int64_t in_image = g.in_channels * g.in_plane(), out_image = g.out_channels * g.out_plane();
  for (int64_t n = 0; n < g.batch; ++n) {
    im2col(g, x + n * in_image, col);
    // dw [K, CRS] = sum_n dy_n [K, PQ] col_n^T [PQ, CRS]
    gemm<T>(false, true, g.out_channels, g.patch(), g.out_plane(), T(1), dy + n * out_image, g.out_plane(), col,
            g.out_plane(), n == 0 ? T(0) : T(1), dw, g.patch());
  }
}

FUSELAB_CONV2D_KERNELS(FUSELAB_INSTANTIATE_CPU)

}  // namespace fuselab::kernels
