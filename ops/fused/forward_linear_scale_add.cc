#include "ops/fused/forward_linear_scale_add.h"

#include "ops/basic/add_extra_input.h"
#include "ops/basic/constant_scale.h"
#include "ops/basic/linear.h"
#include "ops/fusion_pattern.h"
#include "tensor/tensor_math.h"

namespace fuselab {

ForwardLinearScaleAdd::ForwardLinearScaleAdd(const OpList& ops)
    : FusedOp("ForwardLinearScaleAdd", ops, Pass::Forward) {}

FusedForward ForwardLinearScaleAdd::fuser_forward(const std::vector<OpContext*>& ctxs, const Tensor& x,
                                                  const TensorLists& extra_inputs) {
  Linear& linear = op<Linear>(0);
  const Tensor& residual = extra_inputs.back().at(0);
  linear.check_input(x, linear.in_features());
  const Shape out_shape = with_last(x.shape(), linear.out_features());
  check_residual(describe(), residual, out_shape, x);
  const Tensor rows = x.view({-1, linear.in_features()});
  const Tensor y = math::matmul(rows, false, linear.weight(), true, residual.view({-1, linear.out_features()}),
                                op<ConstantScale>(1).scale())
                       .view(out_shape);
  Linear::save_for_backward(*ctxs[0], x, linear.weight());
  return {y, TensorLists(basic_ops().size())};
}

FusionDefinition forward_linear_scale_add_fusion() {
  FusionPattern pattern{{slot<Linear>(), slot<ConstantScale>(), slot<AddExtraInput>()},
                        {},
                        [](const OpList& ops) { return std::make_shared<ForwardLinearScaleAdd>(ops); }};
  return {"ForwardLinearScaleAdd", Pass::Forward, fuse_pattern(std::move(pattern)),
          [](int64_t rows, int64_t w, DType dtype, Generator& gen) {
            return make_fusion_example({std::make_shared<Linear>(w, w, &gen), std::make_shared<ConstantScale>(0.37),
                                        std::make_shared<AddExtraInput>()},
                                       rows, w, dtype, gen);
          }};
}

}  // namespace fuselab
