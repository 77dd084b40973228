// fusion_picture: prints to_dot() (fuser/fusion_picture.h) of a block, the fused forward and backward lists of
// its ops for training on CPU in float32, for Graphviz, after one forward call on a batch of 8 rows
// (gpt: one context of 64 tokens), so that each context edge shows what it held and its bytes. The figures in docs/img/ were made with
//
//   bazel run //tools:fusion_picture -- mlp_block | dot -Tsvg -o docs/img/mlp_block_fusion.svg
//   bazel run //tools:fusion_picture -- residual_block | dot -Tsvg -o docs/img/residual_block_fusion.svg
//   bazel run //tools:fusion_picture -- gpt | dot -Tsvg -o docs/img/gpt_fusion.svg
//
// Models (the sizes do not change the fusion):
//   mlp_block       tools/bench.cc's: Linear, Bias, GELU, Linear, Bias, AddExtraInput, RMSNorm
//   residual_block  examples/charlm.cc's: MakeExtraOutput, RMSNorm, Linear, Bias, GELU, Linear,
//                   Bias, AddExtraInput, the residual passed from the first to the last
//   gpt             examples/gpt.cc's model with one block (examples/models.h)
#include <cstdio>
#include <string>

#include "examples/models.h"
#include "fuser/fusion_picture.h"
#include "ops/basic/activation.h"
#include "ops/basic/add_extra_input.h"
#include "ops/basic/linear.h"
#include "ops/basic/make_extra_output.h"
#include "ops/basic/rmsnorm.h"
#include "tensor/factories.h"

using namespace fuselab;

namespace {

constexpr int64_t kRows = 8;

// One forward call, recorded for backward, on a random batch of the model's input: while the
// caller holds its output, the contexts hold what backward would read.
SequentialOutput call_once(const std::string& model, Sequential& seq, int64_t h) {
  Generator gen(2);
  if (model == "gpt") {
    const examples::Batch batch = examples::gpt_batch(examples::GptConfig{}, 1, DType::Float32, Device::cpu(), gen);
    return seq(batch.input, batch.extra_inputs);
  }
  const Tensor x = randn({kRows, h}, DType::Float32, &gen);
  return seq(x, model == "mlp_block" ? std::vector<Tensor>{x} : std::vector<Tensor>{});
}

Sequential build(const std::string& model, int64_t h) {
  Sequential seq;
  if (model == "mlp_block") {
    seq.append(linear_with_bias(h, 4 * h)).append(std::make_shared<GELU>()).append(linear_with_bias(4 * h, h));
    seq.append(std::make_shared<AddExtraInput>()).append(std::make_shared<RMSNorm>(h, 1e-6));
    return seq;
  }
  if (model == "residual_block") {
    auto branch = std::make_shared<MakeExtraOutput>();
    branch->set_extra_output_channel(0, "residual", /*to_caller=*/false);
    auto add = std::make_shared<AddExtraInput>();
    add->set_extra_input_channel(0, "residual");
    seq.append(branch).append(std::make_shared<RMSNorm>(h)).append(linear_with_bias(h, 2 * h));
    seq.append(std::make_shared<GELU>()).append(linear_with_bias(2 * h, h)).append(add);
    return seq;
  }
  if (model == "gpt") {
    examples::GptConfig c;
    c.layers = 1;
    Generator gen(1);
    return examples::gpt_model(c, gen);
  }
  fail("fusion_picture: unknown model ", model, " (mlp_block, residual_block or gpt)");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fusion_picture mlp_block|residual_block|gpt\n");
    return 2;
  }
  try {
    Sequential seq = build(argv[1], 64);
    const SequentialOutput out = call_once(argv[1], seq, 64);
    std::fputs(to_dot(seq).c_str(), stdout);
  } catch (const Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
