// The gpt programs' tokens: characters (data/char_vocabulary.h) or subword pieces
// (text/bpe_tokenizer.h, --tokenizer=bpe) behind one interface, and a text corpus in those
// tokens, with what it takes to compare runs of either kind: nats per character.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "data/char_vocabulary.h"
#include "data/text_corpus.h"
#include "text/bpe_tokenizer.h"

namespace fuselab::examples {

// The vocabulary of a model that came without a tokenizer FuseLab reads (a Hugging Face model
// imported without one): its size, and an error for any text.
struct NoTokenizer {
  int64_t pieces;
  int64_t size() const { return pieces; }
  Tensor encode(std::string_view) const;
  std::string decode(const std::vector<int64_t>&) const;
};

class TextTokenizer {
 public:
  explicit TextTokenizer(CharVocabulary characters) : impl_(std::move(characters)) {}
  explicit TextTokenizer(BpeTokenizer pieces) : impl_(std::move(pieces)) {}
  explicit TextTokenizer(NoTokenizer none) : impl_(none) {}

  std::string kind() const;  // "char", "bpe" or "none"
  int64_t size() const;
  Tensor encode(std::string_view text) const;  // int64 [tokens]
  std::string decode(const std::vector<int64_t>& ids) const;
  // What a checkpoint records to rebuild it: the characters in id order, the BPE model's bytes,
  // or the size of a vocabulary without a tokenizer.
  std::string saved() const;
  static TextTokenizer from_saved(const std::string& kind, const std::string& saved, const std::string& source);

 private:
  std::variant<CharVocabulary, BpeTokenizer, NoTokenizer> impl_;
};

// A text corpus in the tokens of `tokenizer`: the training and validation token streams, and the
// tokenizer that made them.
struct TokenizedCorpus {
  TextTokenizer tokenizer;
  Tensor train, validation;  // int64 [tokens]
  std::string source;        // where the tokens came from, to print
};

// `corpus` in characters (its own vocabulary), or with kind "bpe" in the pieces of a BPE model
// of `vocab_size` trained on its training text. BPE tokens (and the model) are cached in
// `cache_folder` (data/token_cache.h; "" for no cache): a later run on the same text and
// settings maps them instead of training and encoding again. A cache that cannot be written is
// said in `source`, not an error.
TokenizedCorpus tokenize_corpus(const TextCorpus& corpus, const std::string& kind, int64_t vocab_size,
                                const std::string& cache_folder = "");

// Where the gpt programs cache tokens by default: $XDG_CACHE_HOME/fuselab, else
// $HOME/.cache/fuselab, else none ("").
std::string default_token_cache();

// Mean nats per token over tokens[1:] (as validation_loss gives it) as nats per byte of the text
// those tokens decode to: the unit in which runs of different tokenizers compare.
double nats_per_character(double nats_per_token, const Tensor& tokens, const TextTokenizer& tokenizer);

}  // namespace fuselab::examples
