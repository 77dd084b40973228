#include "ops/fused/backward_linear_add.h"

#include "kernels/cpu/gemm.h"
#include "ops/basic/linear.h"
#include "tensor/dispatch.h"

namespace fuselab {

BackwardLinearAdd::BackwardLinearAdd(const OpList& ops) : FusedOp("BackwardLinearAdd", ops, {Pass::Backward}) {}

FusedBackward BackwardLinearAdd::fuser_backward(const std::vector<OpContext*>& ctxs, const Tensor& dy,
                                                const TensorLists& grad_extra_outputs) {
  Linear& linear = op<Linear>(1);
  const LinearSaved& saved = ctxs[1]->saved<LinearSaved>(linear.describe());
  Tensor dx;
  if (ctxs[0]->input_requires_grad) {
    dx = grad_extra_outputs[0].at(0).clone();
    const int64_t rows = dy.numel() / linear.out_features();
    dispatch_floating(dy.dtype(), "BackwardLinearAdd", [&](auto zero) {
      using T = decltype(zero);
      kernels::cpu::gemm<T>(false, false, rows, linear.in_features(), linear.out_features(), T(1), dy.data<T>(),
                            linear.out_features(), saved.weight.data<T>(), linear.in_features(), T(1), dx.data<T>(),
                            linear.in_features());
    });
  }
  Tensor dw = ctxs[1]->params_require_grad.at(0) ? Linear::weight_grad(dy, saved.input) : Tensor();
  return {dx, TensorLists(2), {{}, {dw}}};
}

}  // namespace fuselab
