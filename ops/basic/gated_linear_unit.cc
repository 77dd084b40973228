#include "ops/basic/gated_linear_unit.h"

#include <string>

#include "kernels/gated_linear_unit.h"
#include "tensor/broadcast.h"
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

Tensor GatedLinearUnit::forward(const char* op, Activation gate, const Tensor& x) {
  const int64_t n = x.size(-1) / 2;
  const Shape out_shape = with_last(x.shape(), n);
  Tensor y = empty(out_shape, x.dtype(), x.device());
  launch_floating<WithBFloat16::Yes>(op, x, [&](auto zero) {
    using T = decltype(zero);
    return kernels::GatedLinearUnitForward<T>{gate, x.ptr<T>(), y.ptr<T>(), math::rows_of(x), n};
  });
  return y;
}

Tensor GatedLinearUnit::backward(const char* op, Activation gate, const Tensor& x, const Tensor& dy) {
  Tensor dx = empty_like(x);
  const int64_t rows = math::rows_of(x), n = x.size(-1) / 2;
  launch_floating<WithBFloat16::Yes>(op, x, [&](auto zero) {
    using T = decltype(zero);
    return kernels::GatedLinearUnitBackward<T>{gate, x.ptr<T>(), dy.ptr<T>(), dx.ptr<T>(), rows, n};
  });
  return dx;
}

OpForward GatedLinearUnit::op_forward(OpContext& ctx, const Tensor& x, const std::vector<Tensor>&) {
  check_input(x, -1);
  check(x.size(-1) % 2 == 0, describe(), ": the last dim of input ", x.shape(), " must be even");
  if (ctx.requires_backward()) ctx.save<GatedLinearUnitSaved>().input = x;
  return {forward(type().c_str(), gate_, x), {}};
}

OpBackward GatedLinearUnit::op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>&) {
  const Tensor& x = ctx.saved<GatedLinearUnitSaved>(describe()).input;
  return {backward((type() + " backward").c_str(), gate_, x, dy), {}, {}};
}

ScaledGatedLinearUnit::ScaledGatedLinearUnit(Activation gate)
    : BasicOp(std::string("Scaled") + gated_linear_unit_name(gate)), gate_(gate) {
  check(gate != Activation::None, "ScaledGatedLinearUnit: the gate needs an activation");
}

OpForward ScaledGatedLinearUnit::op_forward(OpContext& ctx, const Tensor& x, const std::vector<Tensor>& extra) {
  check_input(x, -1);
  check(x.size(-1) % 2 == 0, describe(), ": the last dim of input ", x.shape(), " must be even");
  const Tensor& scale = extra.at(0);
  check_scale(x.shape(), x.dtype(), x.device(), scale);
  Shape rows_shape = x.shape();
  rows_shape.back() = 1;
  const Tensor column = scale.view(rows_shape);
  if (ctx.requires_backward()) ctx.save<ScaledGatedLinearUnitSaved>() = {x, column};
  const Tensor unscaled = GatedLinearUnit::forward(type().c_str(), gate_, x);
  return {math::binary(kernels::BinaryOp::Mul, unscaled, column, type().c_str()), {}};
}

void ScaledGatedLinearUnit::check_scale(const Shape& input, DType dtype, Device device, const Tensor& scale) const {
  Shape leading = input;
  leading.pop_back();
  check(scale.defined(), describe(), ": the scale, its extra input, is missing");
  check(scale.dtype() == dtype && scale.device() == device && scale.shape() == leading, describe(),
        ": the scale must have the leading dims of input ", input, " and its ", dtype, " on ", device, ", got ",
        scale.shape(), " ", scale.dtype(), " on ", scale.device());
}

OpBackward ScaledGatedLinearUnit::op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>&) {
  const ScaledGatedLinearUnitSaved& saved = ctx.saved<ScaledGatedLinearUnitSaved>(describe());
  const char* op = type().c_str();
  const Tensor dx = GatedLinearUnit::backward(op, gate_, saved.input,
                                              math::binary(kernels::BinaryOp::Mul, dy, saved.scale, op));
  const Tensor unscaled = GatedLinearUnit::forward(op, gate_, saved.input);
  Shape scale_shape = saved.scale.shape();
  scale_shape.pop_back();
  const Tensor dscale =
      math::reduce_to(math::binary(kernels::BinaryOp::Mul, dy, unscaled, op), saved.scale.shape()).view(scale_shape);
  return {dx, {dscale}, {}};
}

}  // namespace fuselab
