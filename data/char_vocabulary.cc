#include "data/char_vocabulary.h"

#include <cmath>

#include "tensor/factories.h"

namespace fuselab {
namespace {

// The token ids of an int64 CPU tensor, checked against the vocabulary size.
std::vector<int64_t> checked_ids(const Tensor& ids, int64_t vocab_size, const char* what) {
  check(ids.dtype() == DType::Int64 && ids.device().is_cpu(), what, ": needs an int64 CPU tensor of token ids, got ",
        ids.dtype(), " on ", ids.device());
  std::vector<int64_t> values = ids.to_vector<int64_t>();
  for (const int64_t id : values) {
    check(0 <= id && id < vocab_size, what, ": token id ", id, " is outside the vocabulary of ", vocab_size);
  }
  return values;
}

}  // namespace

CharVocabulary::CharVocabulary(std::string_view training_text) {
  std::array<bool, 256> seen{};
  for (const char c : training_text) seen[static_cast<unsigned char>(c)] = true;
  for (int byte = 0; byte < 256; ++byte) {
    if (!seen[size_t(byte)]) continue;
    bytes_.push_back(static_cast<char>(byte));
    ids_[size_t(byte)] = int64_t(bytes_.size());
  }
}

Tensor CharVocabulary::encode(std::string_view text) const {
  std::vector<int64_t> ids(text.size());
  for (size_t i = 0; i < text.size(); ++i) ids[i] = id(text[i]);
  return from_vector<int64_t>(ids, {int64_t(ids.size())});
}

std::string CharVocabulary::decode(const std::vector<int64_t>& ids) const {
  std::string text;
  text.reserve(ids.size());
  for (const int64_t id : ids) {
    check(0 <= id && id < size(), "CharVocabulary::decode: token id ", id, " is outside the vocabulary of ", size());
    if (id == kUnknownId) {
      text += kUnknownText;
    } else {
      text += bytes_[size_t(id - 1)];
    }
  }
  return text;
}

std::string CharVocabulary::decode(const Tensor& ids) const {
  return decode(checked_ids(ids, size(), "CharVocabulary::decode"));
}

double unigram_cross_entropy(const Tensor& training, const Tensor& evaluated, int64_t vocab_size) {
  check(vocab_size > 0, "unigram_cross_entropy: vocabulary size ", vocab_size);
  const std::vector<int64_t> train_ids = checked_ids(training, vocab_size, "unigram_cross_entropy (training)");
  const std::vector<int64_t> eval_ids = checked_ids(evaluated, vocab_size, "unigram_cross_entropy (evaluated)");
  check(!eval_ids.empty(), "unigram_cross_entropy: no tokens to evaluate");
  std::vector<double> counts(size_t(vocab_size), 1.0);  // add-one smoothing
  for (const int64_t id : train_ids) counts[size_t(id)] += 1;
  const double total = double(train_ids.size()) + double(vocab_size);
  double loss = 0;
  for (const int64_t id : eval_ids) loss -= std::log(counts[size_t(id)] / total);
  return loss / double(eval_ids.size());
}

}  // namespace fuselab
