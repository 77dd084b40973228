#include "ops/fused/backward_linear_scale.h"

#include "autograd/tape.h"
#include "ops/basic/constant_scale.h"
#include "ops/basic/linear.h"
#include "ops/fusion_pattern.h"

namespace fuselab {

BackwardLinearScale::BackwardLinearScale(const OpList& ops) : FusedOp("BackwardLinearScale", ops, Pass::Backward) {}

FusedBackward BackwardLinearScale::fuser_backward(const std::vector<OpContext*>& ctxs, const Tensor& dy,
                                                  const TensorLists&) {
  Linear& linear = op<Linear>(0);
  const LinearSaved& saved = ctxs[0]->saved<LinearSaved>(linear.describe());
  const double s = op<ConstantScale>(1).scale();
  const Tensor dx = ctxs[0]->input_requires_grad ? Linear::input_grad(dy, saved.weight, saved.input.shape(), s)
                                                  : Tensor();
  const Tensor dw = ctxs[0]->params_require_grad.at(0)
                        ? Linear::weight_grad(dy, saved.input, grad_to_accumulate_into(saved.weight), s)
                        : Tensor();
  return {dx, TensorLists(2), {{dw}, {}}};
}

FusionDefinition backward_linear_scale_fusion() {
  FusionPattern pattern{{slot<Linear>(), slot<ConstantScale>()},
                        {},
                        [](const OpList& ops) { return std::make_shared<BackwardLinearScale>(ops); }};
  return {"BackwardLinearScale", Pass::Backward, fuse_pattern(std::move(pattern)),
          [](int64_t rows, int64_t w, DType dtype, Generator& gen) {
            return make_fusion_example({std::make_shared<Linear>(w, w, &gen), std::make_shared<ConstantScale>(-1.7)},
                                       rows, w, dtype, gen);
          }};
}

}  // namespace fuselab
