#include "examples/text_tokens.h"

#include <cstdlib>
#include <numeric>

namespace fuselab::examples {

namespace {

[[noreturn]] void refuse_text() {
  fail("this model has no tokenizer FuseLab reads (it was imported without one): it takes token ids only");
}

}  // namespace

Tensor NoTokenizer::encode(std::string_view) const { refuse_text(); }
std::string NoTokenizer::decode(const std::vector<int64_t>&) const { refuse_text(); }

std::string TextTokenizer::kind() const {
  return std::holds_alternative<CharVocabulary>(impl_) ? "char" : std::holds_alternative<BpeTokenizer>(impl_) ? "bpe" : "none";
}

int64_t TextTokenizer::size() const {
  return std::visit([](const auto& t) { return t.size(); }, impl_);
}

Tensor TextTokenizer::encode(std::string_view text) const {
  return std::visit([&](const auto& t) { return t.encode(text); }, impl_);
}

std::string TextTokenizer::decode(const std::vector<int64_t>& ids) const {
  return std::visit([&](const auto& t) { return t.decode(ids); }, impl_);
}

std::string TextTokenizer::saved() const {
  if (const auto* bpe = std::get_if<BpeTokenizer>(&impl_)) return bpe->model_bytes();
  if (const auto* none = std::get_if<NoTokenizer>(&impl_)) return std::to_string(none->pieces);
  const auto& characters = std::get<CharVocabulary>(impl_);
  std::vector<int64_t> ids(size_t(characters.size() - 1));
  std::iota(ids.begin(), ids.end(), 1);  // every id but the unknown one
  return characters.decode(ids);
}

TextTokenizer TextTokenizer::from_saved(const std::string& kind, const std::string& saved, const std::string& source) {
  check(kind == "char" || kind == "bpe" || kind == "none", source, ": tokenizer '", kind, "' is not char, bpe or none");
  if (kind == "char") return TextTokenizer(CharVocabulary(saved));
  if (kind == "none") {
    char* end = nullptr;
    const long long pieces = std::strtoll(saved.c_str(), &end, 10);
    check(!saved.empty() && *end == '\0' && pieces > 0, source, ": a vocabulary without a tokenizer records its size, "
          "not '", saved.substr(0, 40), "'");
    return TextTokenizer(NoTokenizer{pieces});
  }
  return TextTokenizer(BpeTokenizer::from_model_bytes(saved, source));
}

TokenizedCorpus tokenize_corpus(const TextCorpus& corpus, const std::string& kind, int64_t vocab_size) {
  check(kind == "char" || kind == "bpe", "--tokenizer=", kind, " is not char or bpe");
  if (kind == "char") return {TextTokenizer(corpus.vocab), corpus.train, corpus.validation};
  const std::string train = corpus.vocab.decode(corpus.train.to_vector<int64_t>());
  const std::string validation = corpus.vocab.decode(corpus.validation.to_vector<int64_t>());
  TextTokenizer tokenizer(BpeTokenizer::train(train, vocab_size));
  return {tokenizer, tokenizer.encode(train), tokenizer.encode(validation)};
}

double nats_per_character(double nats_per_token, const Tensor& tokens, const TextTokenizer& tokenizer) {
  const std::vector<int64_t> ids = tokens.to_vector<int64_t>();
  const size_t bytes = tokenizer.decode(std::vector<int64_t>(ids.begin() + 1, ids.end())).size();
  return nats_per_token * double(ids.size() - 1) / double(bytes);
}

}  // namespace fuselab::examples
