#include "data/text_corpus.h"

#include "data/fortune_reader.h"
#include "tensor/error.h"

namespace fuselab {
namespace {

std::string describe_paths(const std::vector<std::string>& paths) {
  if (paths.size() == 1) return paths[0];
  return std::to_string(paths.size()) + " files (" + (paths.empty() ? "" : paths.front() + ", ...") + ")";
}

}  // namespace

DocumentSplit split_documents(const std::vector<std::string>& documents, int64_t validation_every) {
  check(validation_every >= 1, "split_documents: validation_every must be at least 1, got ", validation_every);
  DocumentSplit split;
  for (size_t i = 0; i < documents.size(); ++i) {
    const bool validation = int64_t(i % size_t(validation_every)) == validation_every - 1;
    (validation ? split.validation : split.train).push_back(documents[i]);
  }
  return split;
}

std::string join_documents(const std::vector<std::string>& documents) {
  std::string text;
  for (const std::string& document : documents) {
    text += document;
    if (!document.empty() && document.back() != '\n') text += '\n';
    text += "%\n";
  }
  return text;
}

TextCorpus make_text_corpus(const std::vector<std::string>& documents, const std::string& source,
                            int64_t validation_every) {
  const DocumentSplit split = split_documents(documents, validation_every);
  check(!split.train.empty(), "text corpus ", source, ": ", documents.size(),
        " documents leave no training text (one in every ", validation_every, " is for validation)");
  check(!split.validation.empty(), "text corpus ", source, ": ", documents.size(),
        " documents leave no validation text (one in every ", validation_every,
        " is for validation, so at least ", validation_every, " are needed)");
  const std::string train_text = join_documents(split.train);
  TextCorpus corpus;
  corpus.vocab = CharVocabulary(train_text);
  corpus.train = corpus.vocab.encode(train_text);
  corpus.validation = corpus.vocab.encode(join_documents(split.validation));
  corpus.train_documents = int64_t(split.train.size());
  corpus.validation_documents = int64_t(split.validation.size());
  return corpus;
}

TextCorpus load_text_corpus(const std::vector<std::string>& paths, int64_t validation_every) {
  return make_text_corpus(read_fortunes(paths), describe_paths(paths), validation_every);
}

}  // namespace fuselab
