#include "ops/fusion.h"

#include "tensor/factories.h"

namespace fuselab {

FusionExample make_fusion_example(std::vector<std::shared_ptr<BasicOp>> ops, int64_t rows, int64_t width,
                                  DType dtype, Generator& gen) {
  FusionExample e{std::move(ops), uniform({rows, width}, -1, 1, dtype, &gen), {}};
  for (const auto& op : e.ops) {
    op->to(dtype);
    for (int k = 0; k < op->num_extra_inputs(); ++k) {
      if (op->extra_input_channel(k).empty()) e.extra_inputs.push_back(uniform({rows, width}, -1, 1, dtype, &gen));
    }
  }
  return e;
}

}  // namespace fuselab
