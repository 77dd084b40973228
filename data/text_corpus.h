// A character-level language-modelling corpus: documents split into training and validation by
// document, a vocabulary from the training text, and both parts encoded to token ids (the unigram
// baseline a model must beat is unigram_cross_entropy, data/char_vocabulary.h). Built from fortune
// files by load_text_corpus (data/fortune_reader.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/char_vocabulary.h"
#include "tensor/tensor.h"

namespace fuselab {

// The training and validation documents. Document i is for validation when
// i % validation_every == validation_every - 1: every k-th document, a fraction 1/k (10% for the
// default 10), spread over every file, and the same on every run and machine.
struct DocumentSplit {
  std::vector<std::string> train, validation;
};
DocumentSplit split_documents(const std::vector<std::string>& documents, int64_t validation_every = 10);

// The documents as one stream of text, each followed by a line holding only `%` (the fortune
// files' own separator), so a model learns where a document ends.
std::string join_documents(const std::vector<std::string>& documents);

struct TextCorpus {
  CharVocabulary vocab{""};
  Tensor train, validation;  // int64 [tokens]: the joined documents of each part, encoded
  int64_t train_documents = 0, validation_documents = 0;
};

// The corpus of `documents`; `source` names where they came from in error messages. Throws when
// the split leaves no validation or no training document.
TextCorpus make_text_corpus(const std::vector<std::string>& documents, const std::string& source,
                            int64_t validation_every = 10);

// The corpus of the fortune files at `paths` (fortune_files(kFortuneFolder) for Debian's).
TextCorpus load_text_corpus(const std::vector<std::string>& paths, int64_t validation_every = 10);

}  // namespace fuselab
