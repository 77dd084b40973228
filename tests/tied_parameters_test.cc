// Tied parameters (BasicOp::share_parameter): a language model's token embedding and output Linear
// holding one weight. The Sequential lists it once, and its grad is the sum of both uses' grads,
// fused and unfused, over accumulated backward passes too.
#include <gtest/gtest.h>

#include <memory>

#include "autograd/functional.h"
#include "fuser/sequential.h"
#include "ops/basic/embedding.h"
#include "ops/basic/linear.h"
#include "tensor/factories.h"
#include "tests/expect_error.h"
#include "tests/sequential_testing.h"

namespace fuselab {
namespace {

constexpr int64_t kVocab = 7, kWidth = 5;

struct LanguageModel {
  std::shared_ptr<Embedding> tokens = std::make_shared<Embedding>(kVocab, kWidth);
  std::shared_ptr<Linear> head = std::make_shared<Linear>(kWidth, kVocab);
  Sequential seq{tokens, head};
};

// The loss of a fixed batch: cross-entropy of the logits against fixed next ids.
Tensor loss_of(Sequential& seq) {
  const Tensor ids = from_vector<int64_t>({0, 3, 6, 3, 1}, {5});
  const Tensor next = from_vector<int64_t>({3, 6, 1, 0, 3}, {5});
  return cross_entropy(seq(ids), next);
}

std::vector<double> values(const Tensor& t) { return t.to(DType::Float64).to_vector<double>(); }

void expect_near(const std::vector<double>& a, const std::vector<double>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-12) << i;
}

TEST(TiedParameters, AreListedAndNamedOnce) {
  LanguageModel m;
  m.head->share_parameter("weight", m.tokens->table());
  EXPECT_TRUE(m.head->weight().same(m.tokens->table()));
  EXPECT_EQ(m.seq.parameters().size(), 1u);
  const NamedTensors named = m.seq.named_parameters();
  ASSERT_EQ(named.size(), 1u);
  EXPECT_EQ(named.begin()->first, "embedding0.table");
}

// The tied weight's grad equals the table's grad plus the head weight's grad of an untied twin
// with the same values, whether the Sequential fuses or not, and a second backward adds as much again.
TEST(TiedParameters, GetTheSumOfBothUsesGrads) {
  for (bool fuse : {true, false}) {
    SCOPED_TRACE(fuse ? "fused" : "unfused");
    LanguageModel tied, untied;
    tied.seq.to(DType::Float64).set_fusion_switches(fuse);
    untied.seq.to(DType::Float64).set_fusion_switches(fuse);
    tied.tokens->table().set_data(testing::random_tensor({kVocab, kWidth}, DType::Float64, 4));
    tied.head->share_parameter("weight", tied.tokens->table());
    untied.tokens->table().set_data(tied.tokens->table().detach().clone());
    untied.head->weight().set_data(tied.tokens->table().detach().clone());
    backward(loss_of(untied.seq));
    const std::vector<double> table = values(untied.tokens->table().grad()), head = values(untied.head->weight().grad());
    std::vector<double> both(table.size());
    for (size_t i = 0; i < both.size(); ++i) both[i] = table[i] + head[i];
    backward(loss_of(tied.seq));
    expect_near(values(tied.tokens->table().grad()), both);
    backward(loss_of(tied.seq));  // accumulates: the head may add into the grad in place
    for (double& g : both) g *= 2;
    expect_near(values(tied.tokens->table().grad()), both);
  }
}

TEST(TiedParameters, RefuseAParameterOfAnotherShape) {
  LanguageModel m;
  auto other = std::make_shared<Linear>(kWidth, kVocab + 1);
  testing::expect_error([&] { other->share_parameter("weight", m.tokens->table()); },
                        {"Linear", "weight", "[8, 5]", "[7, 5]"});
  testing::expect_error([&] { m.head->share_parameter("bias", m.tokens->table()); }, {"no parameter 'bias'"});
}

}  // namespace
}  // namespace fuselab
