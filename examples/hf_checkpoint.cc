// Moves a trained model of //examples:gpt between FuseLab's checkpoint and Hugging Face's layout
// (examples/hugging_face.h): config.json and model.safetensors that `transformers` loads as
// GPT2LMHeadModel or LlamaForCausalLM, and back.
//
//   bazel-bin/examples/hf_checkpoint --checkpoint=DIR --export=HF_DIR
//   bazel-bin/examples/hf_checkpoint --import=HF_DIR --checkpoint=DIR    (then generate --checkpoint=DIR)
//
// Export writes FuseLab's tokenizer into model.safetensors' metadata, so that importing the
// folder again gives back the same model and tokenizer exactly, and a BPE model as tokenizer.model
// too (SentencePiece's file, which `transformers`' LlamaTokenizer reads; FuseLab hands it bytes
// 0x80-0xFF as the code points U+0180-U+01FF: text/bpe_tokenizer.h). Import takes the tokenizer
// from that metadata, else from a SentencePiece tokenizer.model in the folder, else records that
// the model has none (generate then refuses text). The imported checkpoint holds the model alone:
// generate and export read it; training cannot resume from it. Import refuses a folder that holds
// a checkpoint already.
#include <filesystem>
#include <fstream>
#include <iterator>

#include "examples/flags.h"
#include "examples/gpt_checkpoint.h"
#include "examples/hugging_face.h"
#include "examples/training_run.h"

using namespace fuselab;
using namespace fuselab::examples;

namespace {

const std::string kTokenizerKind = "fuselab.tokenizer", kTokenizerSaved = "fuselab.vocabulary";

void say(const std::string& from, const GptConfig& c, const TextTokenizer& tokenizer, const std::string& to) {
  std::printf("hf_checkpoint: %s (%s, %lld layers of width %lld, vocabulary %lld, tokenizer %s) -> %s\n", from.c_str(),
              c.arch.c_str(), (long long)c.layers, (long long)c.width, (long long)c.vocab, tokenizer.kind().c_str(),
              to.c_str());
}

void export_checkpoint(const std::string& checkpoint, const std::string& folder) {
  const GptCheckpoint model = load_gpt_checkpoint(checkpoint);
  write_hugging_face(folder, model.config, model.model,
                     {{kTokenizerKind, model.tokenizer.kind()}, {kTokenizerSaved, quote_setting(model.tokenizer.saved())}});
  save_tokenizer_model(model.tokenizer, folder, "export");
  say(checkpoint, model.config, model.tokenizer, folder);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  check(in.good(), "hf_checkpoint: cannot read ", path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The tokenizer of an imported folder: FuseLab's own, SentencePiece's tokenizer.model, or none.
TextTokenizer tokenizer_of(const std::string& folder, const Metadata& metadata, int64_t vocab) {
  const auto kind = metadata.find(kTokenizerKind), saved = metadata.find(kTokenizerSaved);
  const std::string file = folder + "/tokenizer.model";
  TextTokenizer tokenizer(NoTokenizer{vocab});
  if (kind != metadata.end() && saved != metadata.end()) {
    tokenizer = TextTokenizer::from_saved(kind->second, unquote_setting(saved->second), folder + "/model.safetensors");
  } else if (std::filesystem::exists(file)) {
    tokenizer = TextTokenizer(BpeTokenizer::from_model_bytes(read_file(file), file));
  }
  check(tokenizer.size() == vocab, "hf_checkpoint: the tokenizer of ", folder, " has ", tokenizer.size(),
        " tokens, but config.json's vocab_size is ", vocab);
  return tokenizer;
}

// A training run's checkpoint holds its optimizer's state and data order too: never replaced by a model alone.
void check_holds_no_checkpoint(const std::string& checkpoint) {
  check(!std::filesystem::exists(checkpoint + "/gpt.safetensors"), "hf_checkpoint: --checkpoint ", checkpoint,
        " already holds a checkpoint (gpt.safetensors); import into a folder without one");
}

void import_checkpoint(const std::string& folder, const std::string& checkpoint) {
  check_holds_no_checkpoint(checkpoint);
  HuggingFaceModel model = read_hugging_face(folder);
  const TextTokenizer tokenizer = tokenizer_of(folder, model.metadata, model.config.vocab);
  create_output_folder("checkpoint", checkpoint);
  const FolderLock lock("hf_checkpoint: --checkpoint", checkpoint);  // not while a training run writes it
  check_holds_no_checkpoint(checkpoint);  // again, now that no run can write one
  save_gpt_checkpoint(checkpoint, model.config, tokenizer, model.model);
  say(folder, model.config, tokenizer, checkpoint);
}

}  // namespace

int main(int argc, char** argv) {
  return main_reporting_errors(argc, argv, [&] {
    Flags flags("hf_checkpoint", "Exports a checkpoint of gpt to Hugging Face's layout, or imports one.");
    std::string checkpoint, to, from;
    flags.add("checkpoint", checkpoint, "the folder of FuseLab's checkpoint (DIR/gpt.safetensors)");
    flags.add("export", to, "write the checkpoint's model to this folder in Hugging Face's layout");
    flags.add("import", from, "read a Hugging Face GPT-2 or Llama folder into the checkpoint");
    if (!flags.parse(argc, argv)) return 0;
    check(!checkpoint.empty(), "hf_checkpoint: --checkpoint=DIR is required");
    check(to.empty() != from.empty(), "hf_checkpoint: give one of --export=HF_DIR and --import=HF_DIR");
    to.empty() ? import_checkpoint(from, checkpoint) : export_checkpoint(checkpoint, to);
    return 0;
  });
}
