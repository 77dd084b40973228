// Pointwise activations as basic ops: ReLU, GELU (tanh form), SiLU, Sigmoid, QGELU (x sigmoid(1.702 x))
// and SReLU (squared ReLU).
// y = act(x),  dx = dy * act'(x); the formulas are in kernels/activation_math.h.
#pragma once

#include "kernels/activation_math.h"
#include "ops/basic_op.h"

namespace fuselab {

using kernels::Activation;

struct ActivationSaved {
  // x, the pre-activation. For ReLU the output serves as well, since relu'(x) = [x > 0] =
  // [relu(x) > 0]: fused ops that never write x (cuBLASLt's and cuDNN's bias + ReLU) save y.
  Tensor input;
  NamedTensors tensors() const { return {{"input", input}}; }
};

class ActivationOp : public BasicOp {
 public:
  bool has_cuda_kernels() const override { return true; }  // tensor_math and views only
  explicit ActivationOp(Activation act) : BasicOp(kernels::activation_name(act)), act_(act) {}
  Activation activation() const { return act_; }

  OpForward op_forward(OpContext& ctx, const Tensor& x, const std::vector<Tensor>&) override;
  OpBackward op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>&) override;

  static void save_for_backward(OpContext& ctx, const Tensor& pre_activation);

 private:
  Activation act_;
};

class ReLU : public ActivationOp {
 public:
  ReLU() : ActivationOp(Activation::ReLU) {}
};

class GELU : public ActivationOp {
 public:
  GELU() : ActivationOp(Activation::GELU) {}
};

class SiLU : public ActivationOp {
 public:
  SiLU() : ActivationOp(Activation::SiLU) {}
};

class Sigmoid : public ActivationOp {
 public:
  Sigmoid() : ActivationOp(Activation::Sigmoid) {}
};

class QGELU : public ActivationOp {
 public:
  QGELU() : ActivationOp(Activation::QGELU) {}
};

class SReLU : public ActivationOp {
 public:
  SReLU() : ActivationOp(Activation::SReLU) {}
};

}  // namespace fuselab
