#include "ops/fused/backward_linear_add.h"

#include "autograd/tape.h"
#include "ops/basic/linear.h"
#include "ops/basic/make_extra_output.h"
#include "ops/fusion_pattern.h"
#include "tensor/tensor_math.h"

namespace fuselab {

BackwardLinearAdd::BackwardLinearAdd(const OpList& ops) : FusedOp("BackwardLinearAdd", ops, Pass::Backward) {}

FusedBackward BackwardLinearAdd::fuser_backward(const std::vector<OpContext*>& ctxs, const Tensor& dy,
                                                const TensorLists& grad_extra_outputs) {
  Linear& linear = op<Linear>(1);
  const LinearSaved& saved = ctxs[1]->saved<LinearSaved>(linear.describe());
  Tensor dx;
  if (ctxs[0]->input_requires_grad) {
    // dx = dy W + de, with the branch's grad de as the GEMM's C (beta = 1): no separate add pass.
    const Tensor& de = grad_extra_outputs[0].at(0);  // undefined (zero) when the branch was unused
    const Tensor de_rows = de.defined() ? de.view({-1, linear.in_features()}) : Tensor();
    dx = math::matmul(dy.view({-1, dy.size(-1)}), false, saved.weight, false, de_rows).view(saved.input.shape());
  }
  Tensor dw = ctxs[1]->params_require_grad.at(0)
                  ? Linear::weight_grad(dy, saved.input, grad_to_accumulate_into(saved.weight))
                  : Tensor();
  return {dx, TensorLists(2), {{}, {dw}}};
}

FusionDefinition backward_linear_add_fusion() {
  FusionPattern pattern{{slot<MakeExtraOutput>(), slot<Linear>()},
                        {},
                        [](const OpList& ops) { return std::make_shared<BackwardLinearAdd>(ops); }};
  return {"BackwardLinearAdd", Pass::Backward, fuse_pattern(std::move(pattern)),
          [](int64_t rows, int64_t w, DType dtype, Generator& gen) {
            return make_fusion_example({std::make_shared<MakeExtraOutput>(), std::make_shared<Linear>(w, w, &gen)},
                                       rows, w, dtype, gen);
          }};
}

}  // namespace fuselab
