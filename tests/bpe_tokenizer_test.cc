// BpeTokenizer (text/bpe_tokenizer.h) trained on the fortunes' training text: decode(encode(x)) is
// x on the whole validation text, with fewer tokens than characters; a model saved and loaded
// encodes the same; and bad input is an error naming it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "data/fortune_reader.h"
#include "data/text_corpus.h"
#include "tests/expect_error.h"
#include "text/bpe_tokenizer.h"

namespace fuselab {
namespace {

using testing::expect_error;

std::string text_of(const TextCorpus& corpus, const Tensor& ids) { return corpus.vocab.decode(ids.to_vector<int64_t>()); }

// Equal texts, or where they first differ (the texts are long).
void expect_same_text(const std::string& actual, const std::string& expected) {
  const auto [a, e] = std::mismatch(actual.begin(), actual.end(), expected.begin(), expected.end());
  if (a == actual.end() && e == expected.end()) return;
  const size_t at = size_t(e - expected.begin()), from = at < 40 ? 0 : at - 40;
  ADD_FAILURE() << "the texts differ at byte " << at << " of " << expected.size() << ": expected \""
                << expected.substr(from, 80) << "\", got \"" << actual.substr(from, 80) << "\"";
}

class Fortunes : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    corpus_ = new TextCorpus(load_text_corpus(fortune_files()));
    tokenizer_ = new BpeTokenizer(BpeTokenizer::train(text_of(*corpus_, corpus_->train), 1024));
  }
  static TextCorpus* corpus_;
  static BpeTokenizer* tokenizer_;
};
TextCorpus* Fortunes::corpus_ = nullptr;
BpeTokenizer* Fortunes::tokenizer_ = nullptr;

TEST_F(Fortunes, DecodeGivesBackTheWholeValidationTextInFewerTokens) {
  const std::string validation = text_of(*corpus_, corpus_->validation);
  const Tensor ids = tokenizer_->encode(validation);
  EXPECT_EQ(tokenizer_->size(), 1024);
  expect_same_text(tokenizer_->decode(ids.to_vector<int64_t>()), validation);
  EXPECT_LT(double(ids.numel()), 0.5 * double(validation.size())) << ids.numel() << " tokens";
  std::printf("validation: %zu bytes, %lld tokens\n", validation.size(), (long long)ids.numel());
}

TEST_F(Fortunes, ASavedModelEncodesTheSame) {
  const BpeTokenizer loaded = BpeTokenizer::from_model_bytes(tokenizer_->model_bytes(), "the saved model");
  // UTF-8, a Latin-1 byte, a control byte and a byte never seen in training.
  const std::string text = "Quoth the raven, \"Nevermore.\"\n\tA tab, \xC3\xA9t\xC3\xA9, a \xE2\x82\xAC sign, "
                           "\xFC ber, \x01 and \xFF.";
  EXPECT_EQ(loaded.encode(text).to_vector<int64_t>(), tokenizer_->encode(text).to_vector<int64_t>());
  EXPECT_EQ(loaded.decode(loaded.encode(text).to_vector<int64_t>()), text);
}

// The least vocabulary the error asks for is the least SentencePiece trains with.
TEST(BpeTokenizer, TrainsWithTheLeastVocabularyItAsksFor) {
  const std::string text = "some text\nwith \xE9 in it\n";  // 12 distinct characters, not counting lines
  EXPECT_EQ(BpeTokenizer::train(text, 269).size(), 269);
  expect_error([&] { BpeTokenizer::train(text, 268); }, {"at least 269"});
}

TEST_F(Fortunes, BadInputIsAnErrorNamingIt) {
  expect_error([] { BpeTokenizer::from_model_bytes("not a model", "tokenizer.model"); },
               {"tokenizer.model", "not a SentencePiece model"});
  std::string truncated = tokenizer_->model_bytes();
  truncated.resize(truncated.size() / 2);
  expect_error([&] { BpeTokenizer::from_model_bytes(truncated, "half.model"); }, {"half.model"});
  expect_error([] { BpeTokenizer::train("some text\n", 257); }, {"vocab_size 257", "7 distinct", "at least 264"});
  expect_error([] { BpeTokenizer::train("\n\n", 300); }, {"no line"});
  expect_error([] { tokenizer_->decode({5, 1024}); }, {"id 1024", "[0, 1024)"});
}

}  // namespace
}  // namespace fuselab
