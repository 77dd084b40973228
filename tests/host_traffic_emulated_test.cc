// What a training step on CUDA tensors costs the host: on the CUDA emulator, which counts copies
// each way and waits (tools/cuda_emulator/host_traffic.h), a GPT step on a batch already on the
// device (zero_grad, forward, cross-entropy, backward, clip_grad_norm, AdamW step, loss.item())
// copies nothing to the device and waits for nothing once the first step has filled the caching
// allocator: fills, the loss's grad and the losses' backward stay on the device. It reads two
// things back: the loss and the grad norm (one copy for all grads). The token ids and labels are
// checked by the kernels that read them (kernels/index_fault.h), not read back.
#include <gtest/gtest.h>

#include "autograd/functional.h"
#include "examples/models.h"
#include "ops/basic/router.h"
#include "tensor/factories.h"
#include "optim/adamw.h"
#include "optim/clip.h"
#include "tools/cuda_emulator/host_traffic.h"

namespace fuselab {
namespace {

using cuda_emulator::host_traffic;
using cuda_emulator::HostTraffic;

TEST(HostTraffic, ATrainingStepReadsOnlyTheLoss) {
  const Device cuda = Device::cuda(0);
  examples::GptConfig config;
  config.vocab = 11, config.context = 8, config.width = 16, config.layers = 1, config.heads = 2;
  Generator gen(3);
  Sequential model = examples::gpt_model(config, gen);
  model.to(cuda);
  const examples::Batch batch = examples::gpt_batch(config, 4, DType::Float32, cuda, gen);
  AdamW optimizer(model.parameters(), {1e-3, 0.9, 0.95, 1e-8, 0.1});
  auto step = [&] {
    optimizer.zero_grad();
    const Tensor loss = batch.loss(model(batch.input, {}));
    backward(loss);
    clip_grad_norm(model.parameters(), 1.0);
    optimizer.step();
    return loss.item();
  };
  step();
  for (int i = 0; i < 2; ++i) {
    const HostTraffic before = host_traffic();
    step();
    const HostTraffic cost = host_traffic() - before;
    EXPECT_EQ(cost.to_host, 2) << "step " << i + 2;  // the loss and the grad norm
    EXPECT_EQ(cost.to_device, 0) << "step " << i + 2;
    EXPECT_EQ(cost.waits, 0) << "step " << i + 2;
  }
}

// The Router routes on the device: its forward and backward (the logits, the top-k, the weights, the
// auxiliary losses and all their grads) copy nothing either way, once the allocator is warm.
TEST(HostTraffic, TheRouterRoutesOnTheDevice) {
  const Device cuda = Device::cuda(0);
  Generator gen(4);
  auto router = std::make_shared<Router>(8, 4, 2, RouterScore::Softmax, &gen, /*losses=*/true);
  Sequential seq({router});
  seq.to(cuda);
  Tensor x = normal({16, 8}, 0, 1, DType::Float32, &gen).to(cuda);
  x.set_requires_grad(true);
  auto pass = [&] {
    const SequentialOutput out = seq(x, {});
    const Tensor& weights = out.extra_outputs.at(0);
    backward(add(add(sum(mul(weights, weights)), out.extra_outputs.at(2)), out.extra_outputs.at(3)));
  };
  pass();
  const HostTraffic before = host_traffic();
  pass();
  const HostTraffic cost = host_traffic() - before;
  EXPECT_EQ(cost.to_host, 0);
  EXPECT_EQ(cost.to_device, 0);
}

}  // namespace
}  // namespace fuselab
