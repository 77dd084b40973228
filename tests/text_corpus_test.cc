// The character-level text corpus: reading fortune files into documents, the split by document,
// the vocabulary and its unknown id, the unigram baseline, the window sampler and the errors.
// Every test writes its own small files; only the last reads Debian's fortunes, and skips
// without them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "data/char_vocabulary.h"
#include "data/fortune_reader.h"
#include "data/text_corpus.h"
#include "data/window_sampler.h"
#include "tensor/factories.h"
#include "tests/expect_error.h"

namespace fuselab {
namespace {

namespace fs = std::filesystem;
using testing::expect_error;
using Strings = std::vector<std::string>;

std::string temp_path(const std::string& name) {
  return std::string(std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp") + "/" + name;
}

std::string write_file(const std::string& name, const std::string& contents) {
  const std::string path = temp_path(name);
  std::ofstream(path, std::ios::binary) << contents;
  return path;
}

// Documents "doc 0\n", "doc 1\n", ...
Strings numbered_documents(int n) {
  Strings documents;
  for (int i = 0; i < n; ++i) documents.push_back("doc " + std::to_string(i) + "\n");
  return documents;
}

TEST(FortuneReader, SplitsDocumentsOnLinesHoldingOnlyPercent) {
  EXPECT_EQ(split_fortunes("A fool\nand his money.\n%\n50% off\n %\n%\n%\n\n \t\n%\nlast, unterminated"),
            (Strings{"A fool\nand his money.\n", "50% off\n %\n", "last, unterminated\n"}));
  EXPECT_EQ(split_fortunes("%\n%\n"), Strings{});
}

TEST(FortuneReader, ResolvesOverstrikingAndDropsControlBytes) {
  EXPECT_EQ(printable_text("_\bI satisfies *___\b\b\bonly* this\a\r\n\ttab \xc3\xa9t\xc3\xa9"),
            "I satisfies *only* this\n\ttab \xc3\xa9t\xc3\xa9");
  EXPECT_EQ(printable_text("line\n\bnext"), "line\nnext");  // a backspace never joins two lines
}

TEST(FortuneReader, ReadsTheDocumentsOfEveryFileInTurn) {
  const std::string a = write_file("fortunes_a", "one\n%\ntwo\n"), b = write_file("fortunes_b", "three\n%\n");
  EXPECT_EQ(read_fortunes({a, b}), (Strings{"one\n", "two\n", "three\n"}));
}

TEST(FortuneReader, ListsRegularFilesSkippingIndexesLinksAndSubfolders) {
  const fs::path folder = temp_path("fortune_folder");
  fs::remove_all(folder);
  fs::create_directories(folder / "off");
  for (const char* name : {"zippy", "art", "art.dat", "off/rotated"}) std::ofstream(folder / name) << "x\n%\n";
  fs::create_symlink("art", folder / "art.u8");
  EXPECT_EQ(fortune_files(folder.string()), (Strings{(folder / "art").string(), (folder / "zippy").string()}));
}

TEST(FortuneReader, FollowsLinksToFilesElsewhereEachFileOnce) {
  const fs::path files = temp_path("fortune_targets"), links = temp_path("fortune_links");
  fs::remove_all(files);
  fs::remove_all(links);
  fs::create_directories(files / "sub");
  fs::create_directories(links);
  for (const char* name : {"art", "zippy"}) std::ofstream(files / name) << "x\n%\n";
  fs::create_symlink(files / "art", links / "art");
  fs::create_symlink(files / "zippy", links / "zippy");
  fs::create_symlink(files / "zippy", links / "zippy.u8");  // the same file again
  fs::create_symlink(files / "sub", links / "sub");         // a folder, not a fortune file
  fs::create_symlink(files / "gone", links / "gone");       // dangling
  EXPECT_EQ(fortune_files(links.string()), (Strings{(links / "art").string(), (links / "zippy").string()}));
}

TEST(DocumentSplit, EveryKthDocumentIsForValidation) {
  const DocumentSplit split = split_documents(numbered_documents(25), 10);
  EXPECT_EQ(split.validation, (Strings{"doc 9\n", "doc 19\n"}));
  ASSERT_EQ(split.train.size(), 23u);
  EXPECT_EQ(split.train.front(), "doc 0\n");
  EXPECT_EQ(split.train.back(), "doc 24\n");
}

TEST(DocumentSplit, IsTheSameOnEveryCall) {
  const TextCorpus a = make_text_corpus(numbered_documents(40), "test"),
                   b = make_text_corpus(numbered_documents(40), "test");
  EXPECT_EQ(a.train.to_vector<int64_t>(), b.train.to_vector<int64_t>());
  EXPECT_EQ(a.validation.to_vector<int64_t>(), b.validation.to_vector<int64_t>());
  EXPECT_EQ(a.train_documents, 36);
  EXPECT_EQ(a.validation_documents, 4);
}

TEST(CharVocabulary, GivesTrainingBytesIdsInByteOrderAndRoundTrips) {
  const CharVocabulary vocab("hello, world\n");
  EXPECT_EQ(vocab.size(), 11);  // the unknown id, then '\n', ' ', ',', d, e, h, l, o, r, w
  EXPECT_EQ(vocab.id('\n'), 1);
  EXPECT_EQ(vocab.id(' '), 2);
  EXPECT_EQ(vocab.id(','), 3);
  EXPECT_EQ(vocab.id('w'), 10);
  const Tensor ids = vocab.encode("hello\nworld");
  EXPECT_EQ(ids.dtype(), DType::Int64);
  EXPECT_EQ(ids.shape(), (Shape{11}));
  EXPECT_EQ(vocab.decode(ids), "hello\nworld");
}

TEST(CharVocabulary, MapsBytesUnseenInTrainingToTheUnknownId) {
  const CharVocabulary vocab("aab");
  EXPECT_FALSE(vocab.contains('c'));
  EXPECT_EQ(vocab.encode("abc").to_vector<int64_t>(), (std::vector<int64_t>{1, 2, CharVocabulary::kUnknownId}));
  EXPECT_EQ(vocab.decode(std::vector<int64_t>{1, 0, 2}), "a\xEF\xBF\xBD" "b");
  expect_error([&] { vocab.decode(std::vector<int64_t>{3}); }, {"decode", "token id 3", "vocabulary of 3"});
}

TEST(UnigramBaseline, MatchesTheHandComputedAddOneCrossEntropy) {
  // Training "aab", vocabulary {unknown, a, b}: p = (count + 1) / (3 + 3) = a 3/6, b 2/6, unknown 1/6.
  const CharVocabulary vocab("aab");
  const double expected = -(std::log(3.0 / 6) + std::log(2.0 / 6) + std::log(1.0 / 6)) / 3;
  EXPECT_NEAR(unigram_cross_entropy(vocab.encode("aab"), vocab.encode("abc"), vocab.size()), expected, 1e-12);
}

TEST(TextCorpus, EncodesEachPartJoinedWithPercentLines) {
  Strings documents = numbered_documents(9);
  documents.push_back("new: xyz\n");  // the validation document, with bytes training never saw
  const TextCorpus corpus = make_text_corpus(documents, "test");
  EXPECT_EQ(corpus.vocab.decode(corpus.train), join_documents(Strings(documents.begin(), documents.end() - 1)));
  EXPECT_EQ(corpus.vocab.decode(corpus.train).substr(0, 14), "doc 0\n%\ndoc 1\n");
  const std::string unknown = CharVocabulary::kUnknownText;  // "new: xyz": only ' ' is in "doc N"
  EXPECT_EQ(corpus.vocab.decode(corpus.validation), unknown + unknown + unknown + unknown + " " + unknown + unknown +
                                                        unknown + "\n%\n");
}

TEST(WindowSampler, GivesSeededBatchesOfConsecutiveTokenWindows) {
  const Tensor tokens = arange(100);
  WindowSampler a(tokens, 8, 5, 3), b(tokens, 8, 5, 3), c(tokens, 8, 5, 4);
  const Tensor batch = a.next();
  EXPECT_EQ(batch.shape(), (Shape{8, 6}));
  const auto rows = batch.to_vector<int64_t>();
  for (size_t r = 0; r < 8; ++r) {
    for (size_t j = 1; j < 6; ++j) EXPECT_EQ(rows[r * 6 + j], rows[r * 6] + int64_t(j));
    EXPECT_LE(rows[r * 6 + 5], 99);
  }
  EXPECT_EQ(rows, b.next().to_vector<int64_t>());
  EXPECT_NE(rows, c.next().to_vector<int64_t>());
  EXPECT_EQ(a.batches_per_epoch(), 95 / 8);
}

TEST(TextCorpusErrors, NameTheFileThatIsMissingEmptyOrWithoutDocuments) {
  const std::string missing = temp_path("no_such_fortunes");
  expect_error([&] { read_fortunes({missing}); }, {"read_fortunes", missing, "no such file"});
  const std::string empty = write_file("empty_fortunes", "");
  expect_error([&] { read_fortunes({empty}); }, {"read_fortunes", empty, "no documents"});
  const std::string separators = write_file("separator_fortunes", "%\n%\n\n%\n");
  expect_error([&] { load_text_corpus({separators}); }, {separators, "no documents"});
  const std::string folder = temp_path("");
  expect_error([&] { read_fortunes({folder}); }, {"read_fortunes", "is a folder"});
  expect_error([&] { fortune_files(missing); }, {"fortune_files", missing, "no such folder"});
}

TEST(TextCorpusErrors, NameTheFilesWhenTheSplitLeavesAPartEmpty) {
  const std::string few = write_file("few_fortunes", "one\n%\ntwo\n%\nthree\n");
  expect_error([&] { load_text_corpus({few}); }, {few, "3 documents", "no validation text"});
  expect_error([&] { load_text_corpus({few}, 1); }, {few, "3 documents", "no training text"});
  expect_error([&] { split_documents({"one\n"}, 0); }, {"split_documents", "validation_every", "got 0"});
  expect_error([&] { WindowSampler(arange(10), 8, 5, 0); }, {"WindowSampler", "10 tokens", "batch of 8"});
}

// Debian's fortunes, which tools/setup.sh installs: the figures docs/training_programs.md quotes.
// Without them this fails with the install hint rather than passing having checked nothing.
TEST(TextCorpus, ReadsDebiansFortunes) {
  ASSERT_TRUE(fs::is_directory(kFortuneFolder))
      << kFortuneFolder << " is missing: bash tools/setup.sh installs Debian's fortunes";
  const Strings files = fortune_files();
  const Strings documents = read_fortunes(files);
  const TextCorpus corpus = load_text_corpus(files);
  int64_t characters = 0, unknown = 0;
  for (const std::string& document : documents) characters += int64_t(document.size());
  for (const int64_t id : corpus.validation.to_vector<int64_t>()) unknown += id == CharVocabulary::kUnknownId;
  const double baseline = unigram_cross_entropy(corpus.train, corpus.validation, corpus.vocab.size());
  std::printf("fortunes: %zu files, %zu documents, %lld characters; vocabulary %lld; train %lld documents / %lld tokens, "
              "validation %lld documents / %lld tokens (%lld unknown); validation unigram baseline %.4f nats/char\n",
              files.size(), documents.size(), (long long)characters, (long long)corpus.vocab.size(),
              (long long)corpus.train_documents, (long long)corpus.train.size(0),
              (long long)corpus.validation_documents, (long long)corpus.validation.size(0), (long long)unknown,
              baseline);
  EXPECT_LT(corpus.vocab.size(), 256);
  // Lowercase letters alone carry about 4.1 bits (2.9 nats) a character; case, punctuation and
  // white space add to that.
  EXPECT_GT(baseline, 2.5);
  EXPECT_LT(baseline, 4.0);
}

}  // namespace
}  // namespace fuselab
