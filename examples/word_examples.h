// The data of charlm (examples/charlm.cc), a character-level model of words: the words of a word
// list, one example per character (the previous characters and the next one, '.' marking a word's
// start and end), the validation loss, the unigram baseline and sampled words.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "examples/models.h"
#include "fuser/sequential.h"
#include "tensor/random.h"

namespace fuselab::examples {

inline constexpr int64_t kWordVocab = CharLMConfig{}.vocab;  // '.' then a-z

// Lowercased words of letters a-z only, deduplicated, in a seeded random order. Throws naming the
// file when it cannot be read or holds fewer than 10 such words.
std::vector<std::string> read_words(const std::string& path, uint64_t seed);

// One example per character and per word end: the previous `context` ids and the next id.
struct Examples {
  Tensor contexts;  // int64 [N, context]
  Tensor targets;   // int64 [N]
};
Examples make_examples(const std::vector<std::string>& words, int64_t context);

// The mean cross entropy of the model's predictions of every example.
double evaluate(Sequential& model, const Examples& data, Device device);

// Cross-entropy of predicting every validation target from the training targets' frequencies.
double unigram_loss(const Examples& train, const Examples& val);

// A word drawn character by character from the model, at most 30 characters.
std::string sample_word(Sequential& model, int64_t context, Generator& gen, Device device);

}  // namespace fuselab::examples
