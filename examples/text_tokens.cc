#include "examples/text_tokens.h"

#include <cstdio>
#include <cstdlib>
#include <numeric>

#include "data/token_cache.h"

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

TokenizedCorpus tokenize_corpus(const TextCorpus& corpus, const std::string& kind, int64_t vocab_size,
                                const std::string& cache_folder) {
  check(kind == "char" || kind == "bpe", "--tokenizer=", kind, " is not char or bpe");
  if (kind == "char") return {TextTokenizer(corpus.vocab), corpus.train, corpus.validation, "characters"};
  const std::string train = corpus.vocab.decode(corpus.train.to_vector<int64_t>());
  const std::string validation = corpus.vocab.decode(corpus.validation.to_vector<int64_t>());
  // The key: the text, where it splits, and BpeTokenizer's settings (change "bpe1" when
  // BpeTokenizer::train does).
  const std::string settings = "bpe1 " + std::to_string(vocab_size) + " " + std::to_string(train.size());
  const uint64_t key = fnv1a(validation, fnv1a(train, fnv1a(settings)));
  char name[40];
  std::snprintf(name, sizeof name, "/tokens-%016llx.bin", static_cast<unsigned long long>(key));
  const std::string file = cache_folder + name;
  std::string why_not;
  if (!cache_folder.empty()) {
    if (auto cached = read_token_cache(file, key, &why_not)) {
      return {TextTokenizer(BpeTokenizer::from_model_bytes(cached->tokenizer, file)), cached->train,
              cached->validation, "BPE pieces mapped from " + file};
    }
  }
  TextTokenizer tokenizer(BpeTokenizer::train(train, vocab_size));
  TokenizedCorpus tokenized{tokenizer, tokenizer.encode(train), tokenizer.encode(validation), "BPE pieces encoded now"};
  if (cache_folder.empty()) return tokenized;
  tokenized.source += why_not.empty() ? "" : " (" + why_not + ")";
  try {
    write_token_cache(file, key, {tokenizer.saved(), tokenized.train, tokenized.validation});
    tokenized.source += " and cached in " + file;
  } catch (const Error& e) {
    tokenized.source += ", not cached: " + std::string(e.what());
  }
  return tokenized;
}

std::string default_token_cache() {
  if (const char* cache = std::getenv("XDG_CACHE_HOME"); cache && *cache) return std::string(cache) + "/fuselab";
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.cache/fuselab";
  return "";
}

double nats_per_character(double nats_per_token, const Tensor& tokens, const TextTokenizer& tokenizer) {
  const std::vector<int64_t> ids = tokens.to_vector<int64_t>();
  check(ids.size() >= 2, "nats_per_character: ", ids.size(), " tokens have nothing predicted");
  const size_t bytes = tokenizer.decode(std::vector<int64_t>(ids.begin() + 1, ids.end())).size();
  return nats_per_token * double(ids.size() - 1) / double(bytes);
}

}  // namespace fuselab::examples
