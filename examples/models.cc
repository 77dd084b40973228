// The example models' builders and batch makers (see models.h).
#include "examples/models.h"

#include <string>

#include "autograd/functional.h"
#include "examples/square_fusions.h"
#include "ops/basic/activation.h"
#include "ops/basic/add_extra_input.h"
#include "ops/basic/constant_scale.h"
#include "ops/basic/embedding.h"
#include "ops/basic/linear.h"
#include "ops/basic/make_extra_output.h"
#include "ops/basic/reshape.h"
#include "ops/basic/rmsnorm.h"
#include "tensor/factories.h"

namespace fuselab::examples {
namespace {

// The losses take float32 or float64, so a bfloat16 output is cast to float32 first (as
// docs/bfloat16.md does); targets are made in the loss's dtype.
DType loss_dtype(DType dtype) { return dtype == DType::BFloat16 ? DType::Float32 : dtype; }
Tensor loss_input(const Tensor& output) { return cast(output, loss_dtype(output.dtype())); }

}  // namespace

Sequential charlm_model(const CharLMConfig& c, Generator& gen) {
  Sequential model;
  model.append(std::make_shared<Embedding>(c.vocab, c.embed, &gen));
  model.append(std::make_shared<Reshape>(Shape{-1, c.context * c.embed}));
  model.append(linear_with_bias(c.context * c.embed, c.hidden, &gen)).append(std::make_shared<GELU>());
  for (int64_t b = 0; b < c.blocks; ++b) {
    const std::string channel = "residual" + std::to_string(b);
    auto branch = std::make_shared<MakeExtraOutput>();
    branch->set_extra_output_channel(0, channel, /*to_caller=*/false);
    auto add = std::make_shared<AddExtraInput>();
    add->set_extra_input_channel(0, channel);
    model.append(branch).append(std::make_shared<RMSNorm>(c.hidden));
    model.append(linear_with_bias(c.hidden, 2 * c.hidden, &gen)).append(std::make_shared<GELU>());
    model.append(linear_with_bias(2 * c.hidden, c.hidden, &gen)).append(add);
  }
  model.append(std::make_shared<RMSNorm>(c.hidden)).append(linear_with_bias(c.hidden, c.vocab, &gen));
  return model;
}

Batch charlm_batch(const CharLMConfig& c, int64_t rows, DType, Device device, Generator& gen) {
  const Tensor contexts = randint({rows, c.context}, c.vocab, &gen).to(device);
  const Tensor next = randint({rows}, c.vocab, &gen).to(device);
  return {contexts, {}, [next](const SequentialOutput& out) { return cross_entropy(loss_input(out.output), next); }};
}

Sequential classify_model(const ClassifyConfig& c, Generator& gen) {
  Sequential model;
  model.append(linear_with_bias(c.features, c.hidden, &gen)).append(std::make_shared<GELU>());
  model.append(linear_with_bias(c.hidden, c.hidden, &gen)).append(std::make_shared<GELU>());
  model.append(linear_with_bias(c.hidden, c.classes, &gen));
  return model;
}

Batch classify_batch(const ClassifyConfig& c, int64_t rows, DType dtype, Device device, Generator& gen) {
  const Tensor features = randn({rows, c.features}, dtype, &gen).to(device);
  const Tensor labels = randint({rows}, c.classes, &gen).to(device);
  return {features, {}, [labels](const SequentialOutput& out) { return cross_entropy(loss_input(out.output), labels); }};
}

Sequential custom_fusion_model(const CustomFusionConfig& c, Generator& gen) {
  return Sequential({std::make_shared<Linear>(c.width, c.width, &gen), std::make_shared<Square>(),
                     std::make_shared<ConstantScale>(c.scale)});
}

Batch custom_fusion_batch(const CustomFusionConfig& c, int64_t rows, DType dtype, Device device, Generator& gen) {
  Tensor x = randn({rows, c.width}, dtype, &gen).to(device);
  x.set_requires_grad(true);
  return {x, {}, [](const SequentialOutput& out) { return sum(out.output); }};
}

}  // namespace fuselab::examples
