#include "ops/basic/conv2d.h"

#include <cmath>

#include "kernels/conv2d.h"
#include "tensor/factories.h"
#include "tensor/launch.h"

namespace fuselab {

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, int64_t stride, int64_t padding,
               Generator* gen)
    : BasicOp("Conv2d"),
      in_channels_(in_channels),
      out_channels_(out_channels),
      kernel_(kernel_size),
      stride_(stride),
      padding_(padding) {
  check(in_channels > 0 && out_channels > 0 && kernel_size > 0 && stride > 0 && padding >= 0,
        "Conv2d: needs positive channels, kernel size and stride and padding >= 0, got in ", in_channels, ", out ",
        out_channels, ", kernel ", kernel_size, ", stride ", stride, ", padding ", padding);
  const double bound = 1.0 / std::sqrt(double(in_channels * kernel_size * kernel_size));
  add_parameter("weight", uniform({out_channels, in_channels, kernel_size, kernel_size}, -bound, bound,
                                  DType::Float32, gen));
}

kernels::Conv2dGeometry Conv2d::geometry(const Tensor& x) const {
  check_input(x, -1);
  check(x.dim() == 4 && x.size(1) == in_channels_, describe(), ": input of shape ", x.shape(),
        " must be [batch, ", in_channels_, " channels, height, width]");
  check(x.size(2) + 2 * padding_ >= kernel_ && x.size(3) + 2 * padding_ >= kernel_, describe(), ": input of shape ",
        x.shape(), " is smaller than the ", kernel_, "x", kernel_, " kernel with padding ", padding_);
  return {x.size(0), in_channels_, x.size(2), x.size(3), out_channels_, kernel_, kernel_, stride_, padding_};
}

void Conv2d::save_for_backward(OpContext& ctx, const Tensor& x, const Tensor& weight) {
  if (ctx.requires_backward()) ctx.save<Conv2dSaved>() = {x, weight};
}

OpForward Conv2d::op_forward(OpContext& ctx, const Tensor& x, const std::vector<Tensor>&) {
  const kernels::Conv2dGeometry g = geometry(x);
  Tensor y = empty(output_shape(g), x.dtype(), x.device());
  launch_floating("Conv2d", x, [&](auto zero) {
    using T = decltype(zero);
    return kernels::Conv2dForward<T>{g, x.ptr<T>(), weight().ptr<T>(), y.ptr<T>()};
  });
  save_for_backward(ctx, x, weight());
  return {y, {}};
}

OpBackward Conv2d::op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>&) {
  const Conv2dSaved& saved = ctx.saved<Conv2dSaved>(describe());
  const kernels::Conv2dGeometry g = geometry(saved.input);
  Tensor dx = ctx.input_requires_grad ? empty_like(saved.input) : Tensor();
  Tensor dw = ctx.params_require_grad.at(0) ? empty_like(saved.weight) : Tensor();
  if (g.batch == 0) return {dx, {}, {dw.defined() ? dw.zero_() : dw}};  // an empty sum
  dispatch_floating(dy.dtype(), "Conv2d backward", [&](auto zero) {
    using T = decltype(zero);
    if (dx.defined()) {
      launch("Conv2d backward", dy, kernels::Conv2dBackwardData<T>{g, saved.weight.ptr<T>(), dy.ptr<T>(), dx.ptr<T>()});
    }
    if (dw.defined()) {
      launch("Conv2d backward", dy, kernels::Conv2dBackwardFilter<T>{g, saved.input.ptr<T>(), dy.ptr<T>(), dw.ptr<T>()});
    }
  });
  return {dx, {}, {dw}};
}

}  // namespace fuselab
