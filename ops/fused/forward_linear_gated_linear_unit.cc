#include "ops/fused/forward_linear_gated_linear_unit.h"

#include "kernels/gated_linear_unit.h"
#include "ops/basic/bias.h"
#include "ops/basic/gated_linear_unit.h"
#include "ops/basic/linear.h"
#include "ops/fused/bias_fits_linear.h"
#include "ops/fusion_pattern.h"
#include "tensor/factories.h"
#include "tensor/launch.h"
#include "tensor/tensor_math.h"

namespace fuselab {

ForwardLinearGatedLinearUnit::ForwardLinearGatedLinearUnit(const OpList& ops)
    : FusedOp("ForwardLinearGatedLinearUnit", ops, Pass::Forward) {}

FusedForward ForwardLinearGatedLinearUnit::fuser_forward(const std::vector<OpContext*>& ctxs, const Tensor& x,
                                                         const TensorLists&) {
  Linear& linear = op<Linear>(0);
  const bool has_bias = basic_ops().size() == 3;
  const GatedLinearUnit& glu = op<GatedLinearUnit>(has_bias ? 2 : 1);
  linear.check_input(x, linear.in_features());

  const int64_t rows = math::rows_of(x), in = linear.in_features(), n = linear.out_features() / 2;
  Shape out_shape = x.shape();
  out_shape.back() = 2 * n;
  Tensor pre = ctxs.back()->requires_backward() ? empty(out_shape, x.dtype(), x.device()) : Tensor();
  out_shape.back() = n;
  Tensor y = empty(out_shape, x.dtype(), x.device());
  launch_floating<WithBFloat16::Yes>("ForwardLinearGatedLinearUnit", x, [&](auto zero) {
    using T = decltype(zero);
    return kernels::LinearGatedLinearUnitForward<T>{
        glu.gate(), x.ptr<T>(), linear.weight().ptr<T>(), has_bias ? op<Bias>(1).bias().ptr<T>() : nullptr,
        ptr_or_null<T>(pre), y.ptr<T>(), rows, in, n};
  });
  Linear::save_for_backward(*ctxs[0], x, linear.weight());
  if (pre.defined()) ctxs.back()->save<GatedLinearUnitSaved>().input = pre;
  return {y, TensorLists(basic_ops().size())};
}

FusionDefinition forward_linear_gated_linear_unit_fusion() {
  PatternPredicate halves{"the linear's outputs split into halves", [](const PatternMatch& m, const FusionFacts&) {
                            const Linear& linear = m.get<Linear>(0);
                            return linear.out_features() % 2 == 0
                                       ? std::string()
                                       : linear.describe() + " has an odd number of outputs for the gate and up halves";
                          }};
  FusionPattern pattern{{slot<Linear>(), optional_slot<Bias>(), slot<GatedLinearUnit>()},
                        {bias_fits_linear(), halves},
                        [](const OpList& ops) { return std::make_shared<ForwardLinearGatedLinearUnit>(ops); }};
  return {"ForwardLinearGatedLinearUnit", Pass::Forward, fuse_pattern(std::move(pattern)),
          [](int64_t rows, int64_t w, DType dtype, Generator& gen) {
            return make_fusion_example({std::make_shared<Linear>(w, 2 * w, &gen), std::make_shared<Bias>(2 * w, 0.5, &gen),
                                        std::make_shared<SwiGLU>()},
                                       rows, w, dtype, gen);
          }};
}

}  // namespace fuselab
