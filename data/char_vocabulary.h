// A character-level vocabulary: one token id per byte value seen in the training text, and id 0
// reserved for bytes the training text never holds. Ids 1..size()-1 are the training bytes in
// increasing byte order, so the same text always gives the same vocabulary. A validation byte
// unseen in training encodes to kUnknownId and decodes to U+FFFD, the Unicode replacement
// character. Characters are bytes: UTF-8 text's multi-byte characters are several tokens.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tensor/tensor.h"

namespace fuselab {

class CharVocabulary {
 public:
  static constexpr int64_t kUnknownId = 0;
  static constexpr const char* kUnknownText = "\xEF\xBF\xBD";  // U+FFFD in UTF-8

  // The bytes of `training_text`, each given an id.
  explicit CharVocabulary(std::string_view training_text);

  int64_t size() const { return int64_t(bytes_.size()) + 1; }  // the unknown id included
  bool contains(char c) const { return id(c) != kUnknownId; }
  int64_t id(char c) const { return ids_[static_cast<unsigned char>(c)]; }

  Tensor encode(std::string_view text) const;  // int64 [text.size()]
  std::string decode(const std::vector<int64_t>& ids) const;
  std::string decode(const Tensor& ids) const;  // an int64 CPU tensor of any shape, row-major

 private:
  std::vector<char> bytes_;          // bytes_[i] has id i + 1
  std::array<int64_t, 256> ids_{};  // by byte value; kUnknownId where unseen
};

// The cross-entropy, in nats per token, of predicting every token of `evaluated` from the token
// frequencies of `training`, with add-one (Laplace) smoothing over all `vocab_size` ids:
//   p(i) = (count_training(i) + 1) / (len(training) + vocab_size),  loss = -mean log p(evaluated)
// so an unknown id keeps a finite cost. A model that learns anything beyond single-character
// frequencies scores below it.
double unigram_cross_entropy(const Tensor& training, const Tensor& evaluated, int64_t vocab_size);

}  // namespace fuselab
