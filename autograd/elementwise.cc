// Elementwise ops with NumPy broadcasting of both operands, scaling and activations.
//   add: da = reduce_a(dy), db = reduce_b(dy)            sub: da = reduce_a(dy), db = -reduce_b(dy)
//   mul: da = reduce_a(dy * b), db = reduce_b(dy * a)    div: da = reduce_a(dy / b), db = -reduce_b(dy * a / b^2)
// where reduce_x sums a grad of the result's shape back to x's (tensor/broadcast.h): nothing to
// do for an operand of the result's shape.
#include "autograd/checks.h"
#include "autograd/functional.h"
#include "tensor/broadcast.h"
#include "tensor/tensor_math.h"

namespace fuselab {
namespace {

using math::Activation;
using math::BinaryOp;
using math::reduce_to;

Tensor binary_op(const char* name, BinaryOp op, const Tensor& a, const Tensor& b) {
  check_floating(name, a);
  check_floating(name, b);
  Tensor out = math::binary(op, a, b, name);
  return record(name, {a, b}, out, [op, a, b](const auto& grads, const auto& needs) {
    const Tensor& dy = grads[0];
    Tensor da, db;
    switch (op) {
      case BinaryOp::Add:
        if (needs[0]) da = reduce_to(dy, a.shape());
        if (needs[1]) db = reduce_to(dy, b.shape());
        break;
      case BinaryOp::Sub:
        if (needs[0]) da = reduce_to(dy, a.shape());
        if (needs[1]) db = math::scaled(reduce_to(dy, b.shape()), -1);
        break;
      case BinaryOp::Mul:
        if (needs[0]) da = reduce_to(math::binary(BinaryOp::Mul, dy, b), a.shape());
        if (needs[1]) db = reduce_to(math::binary(BinaryOp::Mul, dy, a), b.shape());
        break;
      case BinaryOp::Div:
        if (needs[0]) da = reduce_to(math::binary(BinaryOp::Div, dy, b), a.shape());
        if (needs[1]) {
          const Tensor y_over_b = math::binary(BinaryOp::Div, math::binary(BinaryOp::Div, a, b), b);
          db = math::scaled(reduce_to(math::binary(BinaryOp::Mul, dy, y_over_b), b.shape()), -1);
        }
        break;
    }
    return std::vector<Tensor>{da, db};
  });
}

Tensor activation_op(const char* name, Activation act, const Tensor& x) {
  check_floating(name, x);
  return record(name, {x}, math::activation(act, x), [act, x](const auto& grads, const auto&) {
    return std::vector<Tensor>{math::activation_backward(act, x, grads[0])};
  });
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) { return binary_op("add", BinaryOp::Add, a, b); }
Tensor sub(const Tensor& a, const Tensor& b) { return binary_op("sub", BinaryOp::Sub, a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary_op("mul", BinaryOp::Mul, a, b); }
Tensor div(const Tensor& a, const Tensor& b) { return binary_op("div", BinaryOp::Div, a, b); }

Tensor scale(const Tensor& x, double alpha) {
  check_floating("scale", x);
  return record("scale", {x}, math::scaled(x, alpha), [alpha](const auto& grads, const auto&) {
    return std::vector<Tensor>{math::scaled(grads[0], alpha)};
  });
}

Tensor relu(const Tensor& x) { return activation_op("relu", Activation::ReLU, x); }
Tensor gelu(const Tensor& x) { return activation_op("gelu", Activation::GELU, x); }
Tensor silu(const Tensor& x) { return activation_op("silu", Activation::SiLU, x); }

}  // namespace fuselab
