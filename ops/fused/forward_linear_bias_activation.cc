#include "ops/fused/forward_linear_bias_activation.h"

#include "kernels/linear_epilogue.h"
#include "ops/basic/activation.h"
#include "ops/basic/bias.h"
#include "ops/basic/linear.h"
#include "ops/fused/bias_fits_linear.h"
#include "ops/fusion_pattern.h"
#include "tensor/factories.h"
#include "tensor/launch.h"
#include "tensor/tensor_math.h"

namespace fuselab {

ForwardLinearBiasActivation::ForwardLinearBiasActivation(const OpList& ops)
    : FusedOp("ForwardLinearBiasActivation", ops, Pass::Forward) {}

FusedForward ForwardLinearBiasActivation::fuser_forward(const std::vector<OpContext*>& ctxs, const Tensor& x,
                                                        const TensorLists&) {
  Linear& linear = op<Linear>(0);
  Bias& bias = op<Bias>(1);
  linear.check_input(x, linear.in_features());

  const Shape out_shape = with_last(x.shape(), linear.out_features());
  Tensor y = empty(out_shape, x.dtype(), x.device());
  const Activation act = basic_ops().size() == 3 ? op<ActivationOp>(2).activation() : Activation::None;
  // ReLU's backward reads y instead of pre (ActivationSaved), so no pre is written for it.
  const bool keep_pre = act != Activation::None && act != Activation::ReLU && ctxs[2]->requires_backward();
  Tensor pre = keep_pre ? empty(out_shape, x.dtype(), x.device()) : Tensor();
  const int64_t rows = math::rows_of(x), in = linear.in_features(), out = linear.out_features();
  kernels::EpiloguePath path = kernels::EpiloguePath::OwnPass;
  launch_floating<WithBFloat16::Yes>("ForwardLinearBiasActivation", x, [&](auto zero) {
    using T = decltype(zero);
    return kernels::LinearBiasActivationForward<T>{x.ptr<T>(), linear.weight().ptr<T>(), bias.bias().ptr<T>(),
                                                   act,        ptr_or_null<T>(pre),      y.ptr<T>(),
                                                   rows,       in,                       out,
                                                   &path};
  });
  if (path == kernels::EpiloguePath::FellBack) {
    note_fallback("cuBLASLt has no algorithm for the bias-activation epilogue on " + x.device().str() + " (" +
                  dtype_name(x.dtype()) + "): the GEMM, then a separate bias-activation pass");
  }
  Linear::save_for_backward(*ctxs[0], x, linear.weight());
  if (act != Activation::None) ActivationOp::save_for_backward(*ctxs[2], act == Activation::ReLU ? y : pre);
  return {y, TensorLists(basic_ops().size())};
}

FusionDefinition forward_linear_bias_activation_fusion() {
  FusionPattern pattern{{slot<Linear>(), slot<Bias>(), optional_slot<ReLU, GELU, SiLU>()},
                        {bias_fits_linear()},
                        [](const OpList& ops) { return std::make_shared<ForwardLinearBiasActivation>(ops); }};
  return {"ForwardLinearBiasActivation", Pass::Forward, fuse_pattern(std::move(pattern)),
          [](int64_t rows, int64_t w, DType dtype, Generator& gen) {
            return make_fusion_example({std::make_shared<Linear>(w, w, &gen), std::make_shared<Bias>(w, 0.5, &gen),
                                        std::make_shared<GELU>()},
                                       rows, w, dtype, gen);
          }};
}

}  // namespace fuselab
