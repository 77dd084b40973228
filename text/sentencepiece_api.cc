// libfuselab_sentencepiece.so: text/sentencepiece_api.h over SentencePiece's C++ library.
#include "text/sentencepiece_api.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

thread_local std::string last_error;

const char* failed(const sentencepiece::util::Status& status) {
  if (status.ok()) return nullptr;
  last_error = status.ToString();
  return last_error.c_str();
}

template <class T>
T* copy_out(const T* data, size_t count) {
  T* out = static_cast<T*>(std::malloc(count * sizeof(T) + 1));
  if (count) std::memcpy(out, data, count * sizeof(T));
  return out;
}

// The training lines, one sentence each.
class Lines : public sentencepiece::SentenceIterator {
 public:
  Lines(const char* const* lines, const size_t* sizes, size_t count) : lines_(lines), sizes_(sizes), count_(count) {
    load();
  }
  bool done() const override { return at_ >= count_; }
  void Next() override {
    ++at_;
    load();
  }
  const std::string& value() const override { return value_; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  void load() {
    if (at_ < count_) value_.assign(lines_[at_], sizes_[at_]);
  }
  const char* const* lines_;
  const size_t* sizes_;
  size_t count_, at_ = 0;
  std::string value_;
};

}  // namespace

// SentencePiece's log threshold: exported by the library, declared in no installed header. Its
// trainer logs the command line it runs at INFO before it reads --minloglevel.
namespace sentencepiece::logging {
void SetMinLogLevel(int level);
}

extern "C" {

// Byte-level BPE whose decode gives back exactly the text it encoded: no normalization, no
// whitespace changes or dummy prefix, every byte a piece of its own where no merge covers it,
// and no start or end pieces.
const char* fuselab_spm_train(const char* const* lines, const size_t* sizes, size_t count, int64_t vocab_size,
                              char** model, size_t* model_size) {
  Lines sentences(lines, sizes, count);
  std::string serialized;
  sentencepiece::logging::SetMinLogLevel(2);  // errors only
  const std::string args = "--model_type=bpe --vocab_size=" + std::to_string(vocab_size) +
                           " --normalization_rule_name=identity --add_dummy_prefix=false"
                           " --remove_extra_whitespaces=false --split_by_whitespace=true --byte_fallback=true"
                           " --character_coverage=1.0 --bos_id=-1 --eos_id=-1 --unk_id=0"
                           " --max_sentence_length=1000000 --minloglevel=2 --num_threads=1";
  if (const char* error = failed(sentencepiece::SentencePieceTrainer::Train(args, &sentences, &serialized))) {
    return error;
  }
  *model = copy_out(serialized.data(), serialized.size());
  *model_size = serialized.size();
  return nullptr;
}

const char* fuselab_spm_load(const char* model, size_t model_size, void** processor, int64_t* pieces) {
  auto* loaded = new sentencepiece::SentencePieceProcessor();
  if (const char* error = failed(loaded->LoadFromSerializedProto(std::string(model, model_size)))) {
    delete loaded;
    return error;
  }
  *processor = loaded;
  *pieces = loaded->GetPieceSize();
  return nullptr;
}

void fuselab_spm_free(void* processor) { delete static_cast<sentencepiece::SentencePieceProcessor*>(processor); }

const char* fuselab_spm_encode(const void* processor, const char* text, size_t size, int32_t** ids, size_t* count) {
  std::vector<int> encoded;
  const auto* p = static_cast<const sentencepiece::SentencePieceProcessor*>(processor);
  if (const char* error = failed(p->Encode(std::string(text, size), &encoded))) return error;
  std::vector<int32_t> narrow(encoded.begin(), encoded.end());
  *ids = copy_out(narrow.data(), narrow.size());
  *count = narrow.size();
  return nullptr;
}

const char* fuselab_spm_decode(const void* processor, const int32_t* ids, size_t count, char** text, size_t* size) {
  std::string decoded;
  const auto* p = static_cast<const sentencepiece::SentencePieceProcessor*>(processor);
  if (const char* error = failed(p->Decode(std::vector<int>(ids, ids + count), &decoded))) return error;
  *text = copy_out(decoded.data(), decoded.size());
  *size = decoded.size();
  return nullptr;
}

void fuselab_spm_free_buffer(void* buffer) { std::free(buffer); }
}
