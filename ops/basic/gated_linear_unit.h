// Gated linear units: split the last dim of x into halves a and b; y = gate(a) * b, with the gate
// one of kernels/activation_math.h's activations. The family by its usual names: GLU (Sigmoid),
// ReGLU (ReLU), GEGLU (GELU), QGEGLU (QGELU), SReGLU (SReLU), SwiGLU (SiLU, Llama's MLP).
// The math is in kernels/gated_linear_unit_math.h; kernels in kernels/cpu and kernels/cuda.
#pragma once

#include "kernels/activation_math.h"
#include "ops/basic_op.h"

namespace fuselab {

struct GatedLinearUnitSaved {
  Tensor input;
  NamedTensors tensors() const { return {{"input", input}}; }
};

struct ScaledGatedLinearUnitSaved {
  Tensor input;
  Tensor scale;  // [..., 1]: the scale with a last dim of 1, to broadcast over a row
  NamedTensors tensors() const { return {{"input", input}, {"scale", scale}}; }
};

class GatedLinearUnit : public BasicOp {
 public:
  bool has_cuda_kernels() const override { return true; }
  explicit GatedLinearUnit(kernels::Activation gate);
  kernels::Activation gate() const { return gate_; }
  OpForward op_forward(OpContext& ctx, const Tensor& x, const std::vector<Tensor>&) override;
  OpBackward op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>&) override;

  // The math, shared with the scaled form: y = gate(a)·b and dx of dy, through the kernels.
  static Tensor forward(const char* op, kernels::Activation gate, const Tensor& x);
  static Tensor backward(const char* op, kernels::Activation gate, const Tensor& x, const Tensor& dy);

 private:
  kernels::Activation gate_;
};

// A gated linear unit whose rows are scaled by the call's one extra input, a scale s of x's
// leading dims (in a mixture of experts, the routing weight of each token's copy), as
// TransformerEngine's ScaledSwiGLU:
//   y = s · gate(a)·b,   dx = GLU backward(s · dy),   ds = Σ_j dy_j (gate(a)·b)_j
// gate(a)·b is recomputed in backward (one pass) rather than held. Named "Scaled" + the family name.
class ScaledGatedLinearUnit : public BasicOp {
 public:
  bool has_cuda_kernels() const override { return true; }
  explicit ScaledGatedLinearUnit(kernels::Activation gate);
  kernels::Activation gate() const { return gate_; }
  int num_extra_inputs() const override { return 1; }  // the scale
  // Throws unless `scale` has the leading dims of an input of shape `input` and its dtype and device
  // (GroupedMlp, which fuses this op, checks its scale with it too).
  void check_scale(const Shape& input, DType dtype, Device device, const Tensor& scale) const;
  OpForward op_forward(OpContext& ctx, const Tensor& x, const std::vector<Tensor>& extra) override;
  OpBackward op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>&) override;

 private:
  kernels::Activation gate_;
};

class ScaledGLU : public ScaledGatedLinearUnit {
 public:
  ScaledGLU() : ScaledGatedLinearUnit(kernels::Activation::Sigmoid) {}
};

class ScaledReGLU : public ScaledGatedLinearUnit {
 public:
  ScaledReGLU() : ScaledGatedLinearUnit(kernels::Activation::ReLU) {}
};

class ScaledGEGLU : public ScaledGatedLinearUnit {
 public:
  ScaledGEGLU() : ScaledGatedLinearUnit(kernels::Activation::GELU) {}
};

class ScaledQGEGLU : public ScaledGatedLinearUnit {
 public:
  ScaledQGEGLU() : ScaledGatedLinearUnit(kernels::Activation::QGELU) {}
};

class ScaledSReGLU : public ScaledGatedLinearUnit {
 public:
  ScaledSReGLU() : ScaledGatedLinearUnit(kernels::Activation::SReLU) {}
};

class ScaledSwiGLU : public ScaledGatedLinearUnit {
 public:
  ScaledSwiGLU() : ScaledGatedLinearUnit(kernels::Activation::SiLU) {}
};

// The family's usual names (the op's name in describe() too).
const char* gated_linear_unit_name(kernels::Activation gate);

class GLU : public GatedLinearUnit {
 public:
  GLU() : GatedLinearUnit(kernels::Activation::Sigmoid) {}
};

class ReGLU : public GatedLinearUnit {
 public:
  ReGLU() : GatedLinearUnit(kernels::Activation::ReLU) {}
};

class GEGLU : public GatedLinearUnit {
 public:
  GEGLU() : GatedLinearUnit(kernels::Activation::GELU) {}
};

class QGEGLU : public GatedLinearUnit {
 public:
  QGEGLU() : GatedLinearUnit(kernels::Activation::QGELU) {}
};

class SReGLU : public GatedLinearUnit {
 public:
  SReGLU() : GatedLinearUnit(kernels::Activation::SReLU) {}
};

class SwiGLU : public GatedLinearUnit {
 public:
  SwiGLU() : GatedLinearUnit(kernels::Activation::SiLU) {}
};

}  // namespace fuselab
