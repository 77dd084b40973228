#include "kernels/cpu/linear_epilogue.h"

#include <algorithm>

#include "kernels/cpu/bias_activation.h"
#include "kernels/cpu/gemm.h"

namespace fuselab::kernels::cpu {

int64_t epilogue_panel_rows(int64_t out, int64_t element_size) {
  constexpr int64_t kPanelBytes = 512 * 1024;  // half of a Zen 4 core's 1 MiB L2
  return std::max<int64_t>(64, kPanelBytes / std::max<int64_t>(1, out * element_size));
}

template <class T>
void linear_bias_activation_forward(const T* x, const T* w, const T* b, bool has_activation, Activation act,
                                    T* pre, T* y, int64_t rows, int64_t in, int64_t out) {
  const int64_t panel = epilogue_panel_rows(out, sizeof(T));
  for (int64_t r0 = 0; r0 < rows; r0 += panel) {
    const int64_t n = std::min(panel, rows - r0);
    T* y_panel = y + r0 * out;
    gemm<T>(false, true, n, out, in, T(1), x + r0 * in, in, w, in, T(0), y_panel, out);
    if (has_activation) {
      bias_activation_forward<T>(act, b, y_panel, pre ? pre + r0 * out : nullptr, n, out);
    } else {
      add_bias<T>(b, y_panel, n, out);
      if (pre) std::copy(y_panel, y_panel + n * out, pre + r0 * out);
    }
  }
}

template <class T>
void linear_bias_add_forward(const T* x, const T* w, const T* b, T* y, int64_t rows, int64_t in, int64_t out) {
  const int64_t panel = epilogue_panel_rows(out, sizeof(T));
  for (int64_t r0 = 0; r0 < rows; r0 += panel) {
    const int64_t n = std::min(panel, rows - r0);
    gemm<T>(false, true, n, out, in, T(1), x + r0 * in, in, w, in, T(1), y + r0 * out, out);
    if (b) add_bias<T>(b, y + r0 * out, n, out);
  }
}

template void linear_bias_activation_forward<float>(const float*, const float*, const float*, bool, Activation,
                                                    float*, float*, int64_t, int64_t, int64_t);
template void linear_bias_activation_forward<double>(const double*, const double*, const double*, bool,
                                                     Activation, double*, double*, int64_t, int64_t, int64_t);
template void linear_bias_add_forward<float>(const float*, const float*, const float*, float*, int64_t, int64_t,
                                             int64_t);
template void linear_bias_add_forward<double>(const double*, const double*, const double*, double*, int64_t,
                                              int64_t, int64_t);

}  // namespace fuselab::kernels::cpu
