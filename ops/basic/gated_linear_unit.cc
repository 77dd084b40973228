#include "ops/basic/gated_linear_unit.h"

#include <string>

#include "kernels/gated_linear_unit.h"
#include "tensor/factories.h"
#include "tensor/launch.h"
#include "tensor/tensor_math.h"

namespace fuselab {

using kernels::Activation;

const char* gated_linear_unit_name(Activation gate) {
  switch (gate) {
    case Activation::Sigmoid: return "GLU";
    case Activation::ReLU: return "ReGLU";
    case Activation::GELU: return "GEGLU";
    case Activation::QGELU: return "QGEGLU";
    case Activation::SReLU: return "SReGLU";
    case Activation::SiLU: return "SwiGLU";
    case Activation::None: break;
  }
  return "GatedLinearUnit(None)";
}

GatedLinearUnit::GatedLinearUnit(Activation gate) : BasicOp(gated_linear_unit_name(gate)), gate_(gate) {
  check(gate != Activation::None, "GatedLinearUnit: the gate needs an activation (None leaves a bilinear unit, "
                                  "which is not one of the family)");
}

OpForward GatedLinearUnit::op_forward(OpContext& ctx, const Tensor& x, const std::vector<Tensor>&) {
  check_input(x, -1);
  check(x.size(-1) % 2 == 0, describe(), ": the last dim of input ", x.shape(), " must be even");
  const int64_t n = x.size(-1) / 2;
  Shape out_shape = x.shape();
  out_shape.back() = n;
  Tensor y = empty(out_shape, x.dtype(), x.device());
  launch_floating(type().c_str(), x, [&](auto zero) {
    using T = decltype(zero);
    return kernels::GatedLinearUnitForward<T>{gate_, x.ptr<T>(), y.ptr<T>(), math::rows_of(x), n};
  });
  if (ctx.requires_backward()) ctx.save<GatedLinearUnitSaved>().input = x;
  return {y, {}};
}

OpBackward GatedLinearUnit::op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>&) {
  const Tensor& x = ctx.saved<GatedLinearUnitSaved>(describe()).input;
  Tensor dx = empty_like(x);
  const int64_t rows = math::rows_of(x), n = x.size(-1) / 2;
  launch_floating((type() + " backward").c_str(), x, [&](auto zero) {
    using T = decltype(zero);
    return kernels::GatedLinearUnitBackward<T>{gate_, x.ptr<T>(), dy.ptr<T>(), dx.ptr<T>(), rows, n};
  });
  return {dx, {}, {}};
}

}  // namespace fuselab
