// Run with FUSELAB_FUSION=0 in the environment (see tests/BUILD): nothing fuses.
#include <gtest/gtest.h>

#include <cstdlib>

#include "fuser/sequential.h"
#include "ops/basic/activation.h"
#include "ops/basic/bias.h"
#include "ops/basic/linear.h"

namespace fuselab {
namespace {

TEST(FusionEnvironment, FuselabFusionZeroTurnsFusionOffGlobally) {
  ASSERT_STREQ(std::getenv("FUSELAB_FUSION"), "0");
  EXPECT_FALSE(global_fusion_switches().enabled);
  Sequential seq({std::make_shared<Linear>(3, 3), std::make_shared<Bias>(3), std::make_shared<GELU>()});
  EXPECT_EQ(seq.describe(),
            "forward: [Linear(linear0), Bias(bias0), GELU(gelu0)]\nbackward: [Linear(linear0), Bias(bias0), GELU(gelu0)]");
}

}  // namespace
}  // namespace fuselab
