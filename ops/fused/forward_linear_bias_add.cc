#include "ops/fused/forward_linear_bias_add.h"

#include "kernels/linear_epilogue.h"
#include "ops/basic/add_extra_input.h"
#include "ops/basic/bias.h"
#include "ops/basic/linear.h"
#include "ops/fused/bias_fits_linear.h"
#include "ops/fusion_pattern.h"
#include "tensor/factories.h"
#include "tensor/launch.h"
#include "tensor/tensor_math.h"

namespace fuselab {

ForwardLinearBiasAdd::ForwardLinearBiasAdd(const OpList& ops) : FusedOp("ForwardLinearBiasAdd", ops, Pass::Forward) {}

FusedForward ForwardLinearBiasAdd::fuser_forward(const std::vector<OpContext*>& ctxs, const Tensor& x,
                                                 const TensorLists& extra_inputs) {
  Linear& linear = op<Linear>(0);
  const bool has_bias = basic_ops().size() == 3;
  const Tensor& residual = extra_inputs.back().at(0);
  linear.check_input(x, linear.in_features());
  const Shape out_shape = with_last(x.shape(), linear.out_features());
  check_residual(describe(), residual, out_shape, x);

  Tensor y = empty(out_shape, x.dtype(), x.device());
  const int64_t rows = math::rows_of(x), in = linear.in_features(), out = linear.out_features();
  kernels::EpiloguePath path = kernels::EpiloguePath::OwnPass;
  launch_floating<WithBFloat16::Yes>("ForwardLinearBiasAdd", x, [&](auto zero) {
    using T = decltype(zero);
    return kernels::LinearBiasAddForward<T>{x.ptr<T>(), linear.weight().ptr<T>(),
                                            has_bias ? op<Bias>(1).bias().ptr<T>() : nullptr,
                                            residual.ptr<T>(), y.ptr<T>(), rows, in, out, &path};
  });
  if (path == kernels::EpiloguePath::FellBack) {
    note_fallback("cuBLASLt has no algorithm for the bias-residual epilogue on " + x.device().str() + " (" +
                  dtype_name(x.dtype()) + "): the GEMM, then a separate bias-residual pass");
  }
  Linear::save_for_backward(*ctxs[0], x, linear.weight());
  return {y, TensorLists(basic_ops().size())};
}

FusionDefinition forward_linear_bias_add_fusion() {
  FusionPattern pattern{{slot<Linear>(), optional_slot<Bias>(), slot<AddExtraInput>()},
                        {bias_fits_linear()},
                        [](const OpList& ops) { return std::make_shared<ForwardLinearBiasAdd>(ops); }};
  return {"ForwardLinearBiasAdd", Pass::Forward, fuse_pattern(std::move(pattern)),
          [](int64_t rows, int64_t w, DType dtype, Generator& gen) {
            return make_fusion_example({std::make_shared<Linear>(w, w, &gen), std::make_shared<Bias>(w, 0.5, &gen),
                                        std::make_shared<AddExtraInput>()},
                                       rows, w, dtype, gen);
          }};
}

}  // namespace fuselab
