// Run with FUSELAB_FUSION_LOG=1 and FUSELAB_DISABLE_FUSIONS=BackwardActivationBias (see
// tests/BUILD): fusing logs the explain text to stderr, and that fusion is off everywhere.
#include <gtest/gtest.h>

#include "fuser/sequential.h"
#include "ops/basic/activation.h"
#include "ops/basic/bias.h"
#include "ops/basic/linear.h"
#include "tensor/factories.h"

namespace fuselab {
namespace {

TEST(FusionEnvironment, FusionLogAndDisabledFusionsFromTheEnvironment) {
  Sequential seq({std::make_shared<Linear>(3, 3), std::make_shared<Bias>(3), std::make_shared<GELU>()});
  ::testing::internal::CaptureStderr();
  Tensor x = ones({2, 3});
  x.set_requires_grad(true);
  seq(x);
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("[fuselab] fused a Sequential of 3 ops"), std::string::npos) << log;
  EXPECT_NE(log.find("matched  linear0, bias0, gelu0 -> ForwardLinearBiasActivation"), std::string::npos) << log;
  EXPECT_NE(log.find("BackwardActivationBias: disabled"), std::string::npos) << log;
  EXPECT_EQ(seq.describe().find("BackwardActivationBias("), std::string::npos) << seq.describe();
}

}  // namespace
}  // namespace fuselab
