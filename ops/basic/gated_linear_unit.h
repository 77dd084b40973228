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

class GatedLinearUnit : public BasicOp {
 public:
  bool has_cuda_kernels() const override { return true; }
  explicit GatedLinearUnit(kernels::Activation gate);
  kernels::Activation gate() const { return gate_; }
  OpForward op_forward(OpContext& ctx, const Tensor& x, const std::vector<Tensor>&) override;
  OpBackward op_backward(OpContext& ctx, const Tensor& dy, const std::vector<Tensor>&) override;

 private:
  kernels::Activation gate_;
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
