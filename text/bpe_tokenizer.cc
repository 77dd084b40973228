#include "text/bpe_tokenizer.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstdlib>

#include "runtime/shared_library.h"
#include "tensor/factories.h"
#include "text/sentencepiece_api.h"

namespace fuselab {
namespace {

constexpr const char* kLibrary = "libfuselab_sentencepiece.so";

// Where Bazel puts the library beside a program that lists it as data: the program's runfiles
// (its own, or the test's that runs it), then bazel-bin/text/ next to bazel-bin/<package>/. A
// program copied elsewhere finds it in its own directory (copy the library beside it) or on
// LD_LIBRARY_PATH.
std::vector<std::string> library_files() {
  std::vector<std::string> files;
  char exe[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  const std::string program = n > 0 ? std::string(exe, size_t(n)) : "";
  const std::string in_runfiles = std::string("/fuselab/text/") + kLibrary;
  if (!program.empty()) files.push_back(program + ".runfiles" + in_runfiles);
  for (const char* variable : {"RUNFILES_DIR", "TEST_SRCDIR"}) {
    if (const char* dir = std::getenv(variable)) files.push_back(dir + in_runfiles);
  }
  const std::string directory = program.substr(0, program.rfind('/') + 1);
  if (!program.empty()) files.push_back(directory + "../text/" + kLibrary);
  if (!program.empty()) files.push_back(directory + kLibrary);
  files.push_back(kLibrary);  // LD_LIBRARY_PATH
  return files;
}

const runtime::SharedLibrary& library() {
  static const runtime::SharedLibrary opened(
      "SentencePiece", library_files(),
      "Debian's libsentencepiece-dev (bash tools/setup.sh), and build //text:libfuselab_sentencepiece.so");
  return opened;
}

template <class Fn>
Fn api(const char* name) {
  return reinterpret_cast<Fn>(library().symbol(name));
}

void check_ok(const char* error, const std::string& what) { check(error == nullptr, what, ": ", error ? error : ""); }

// SentencePiece reads Unicode, and a text may hold any bytes (the fortunes have Latin-1 ones): each
// byte 0x80-0xFF goes to the model as the code point U+0100 + byte (two UTF-8 bytes, 0xC6 or 0xC7
// then one more) and comes back on decode, so every byte string round-trips, and a UTF-8 letter is
// a pair of such code points that BPE learns to merge. ASCII goes as itself, so spaces still split.
constexpr unsigned kByteBase = 0x100;

std::string to_model_text(std::string_view bytes) {
  std::string text;
  text.reserve(bytes.size() * 2);
  for (const char c : bytes) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x80) {
      text += c;
    } else {
      const unsigned point = kByteBase + byte;
      text += char(0xC0 | (point >> 6)), text += char(0x80 | (point & 0x3F));
    }
  }
  return text;
}

std::string from_model_text(std::string_view text) {
  std::string bytes;
  bytes.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const auto lead = static_cast<unsigned char>(text[i]);
    if ((lead == 0xC6 || lead == 0xC7) && i + 1 < text.size()) {
      bytes += char(((lead & 0x1F) << 6 | (static_cast<unsigned char>(text[i + 1]) & 0x3F)) - kByteBase), ++i;
    } else {
      bytes += text[i];  // ASCII
    }
  }
  return bytes;
}

}  // namespace

BpeTokenizer::BpeTokenizer(std::string model, std::shared_ptr<void> processor, int64_t pieces)
    : model_(std::move(model)), processor_(std::move(processor)), pieces_(pieces) {}

BpeTokenizer BpeTokenizer::train(std::string_view text, int64_t vocab_size) {
  // SentencePiece keeps a piece for each of the text's characters, the 256 byte pieces (for text
  // it has not seen) and the unknown piece.
  std::array<bool, 256> seen{};
  for (const char c : text) seen[static_cast<unsigned char>(c)] = c != '\n';  // lines split the text
  const int64_t characters = std::count(seen.begin(), seen.end(), true), least = characters + 257;
  check(vocab_size >= least && vocab_size <= INT32_MAX, "BpeTokenizer::train: vocab_size ", vocab_size,
        " must hold the 256 bytes, the unknown piece and the text's ", characters, " distinct characters (at least ",
        least, ")");
  const std::string model_text = to_model_text(text);
  std::vector<const char*> lines;
  std::vector<size_t> sizes;
  for (size_t start = 0; start < model_text.size();) {
    size_t end = model_text.find('\n', start);
    if (end == std::string::npos) end = model_text.size();
    if (end > start) lines.push_back(model_text.data() + start), sizes.push_back(end - start);
    start = end + 1;
  }
  check(!lines.empty(), "BpeTokenizer::train: the text has no line to learn from");
  char* model = nullptr;
  size_t size = 0;
  check_ok(api<decltype(&fuselab_spm_train)>("fuselab_spm_train")(lines.data(), sizes.data(), lines.size(),
                                                                    vocab_size, &model, &size),
           "BpeTokenizer::train with vocab_size " + std::to_string(vocab_size));
  std::string bytes(model, size);
  api<decltype(&fuselab_spm_free_buffer)>("fuselab_spm_free_buffer")(model);
  return from_model_bytes(bytes, "the model just trained");
}

BpeTokenizer BpeTokenizer::from_model_bytes(const std::string& bytes, const std::string& source) {
  void* processor = nullptr;
  int64_t pieces = 0;
  check_ok(api<decltype(&fuselab_spm_load)>("fuselab_spm_load")(bytes.data(), bytes.size(), &processor, &pieces),
           "BpeTokenizer: " + source + " is not a SentencePiece model");
  return {bytes, std::shared_ptr<void>(processor, api<decltype(&fuselab_spm_free)>("fuselab_spm_free")), pieces};
}

Tensor BpeTokenizer::encode(std::string_view text) const {
  int32_t* ids = nullptr;
  size_t count = 0;
  const std::string model_text = to_model_text(text);
  check_ok(api<decltype(&fuselab_spm_encode)>("fuselab_spm_encode")(processor_.get(), model_text.data(),
                                                                      model_text.size(), &ids, &count),
           "BpeTokenizer::encode");
  std::vector<int64_t> wide(ids, ids + count);
  api<decltype(&fuselab_spm_free_buffer)>("fuselab_spm_free_buffer")(ids);
  return from_vector<int64_t>(wide, {int64_t(wide.size())});
}

std::string BpeTokenizer::decode(const std::vector<int64_t>& ids) const {
  std::vector<int32_t> narrow;
  for (const int64_t id : ids) {
    check(id >= 0 && id < pieces_, "BpeTokenizer::decode: id ", id, " is outside the vocabulary [0, ", pieces_, ")");
    narrow.push_back(int32_t(id));
  }
  char* text = nullptr;
  size_t size = 0;
  check_ok(api<decltype(&fuselab_spm_decode)>("fuselab_spm_decode")(processor_.get(), narrow.data(), narrow.size(),
                                                                      &text, &size),
           "BpeTokenizer::decode");
  std::string decoded = from_model_text(std::string_view(text, size));
  api<decltype(&fuselab_spm_free_buffer)>("fuselab_spm_free_buffer")(text);
  return decoded;
}

}  // namespace fuselab
