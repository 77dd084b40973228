#include "examples/gpt_checkpoint.h"

#include <filesystem>

#include "examples/flags.h"
#include "examples/gpt_flags.h"
#include "examples/output_file.h"
#include "examples/training_run.h"
#include "optim/checkpoint.h"

namespace fuselab::examples {

GptCheckpoint load_gpt_checkpoint(const std::string& folder) {
  const std::string file = folder + "/gpt.safetensors";
  const Metadata settings = checkpoint_settings(file);
  GptConfig config = gpt_model_of_checkpoint(settings, file);
  const auto kind = settings.find("--tokenizer"), vocabulary = settings.find("vocabulary");
  check(kind != settings.end() && vocabulary != settings.end(), "checkpoint ", file,
        " does not record its tokenizer: not a checkpoint of gpt");
  TextTokenizer tokenizer = TextTokenizer::from_saved(kind->second, unquote_setting(vocabulary->second), file);
  config.vocab = tokenizer.size();
  Generator init(0);
  Sequential model = gpt_model(config, init);
  if (const auto dtype = settings.find("--dtype"); dtype != settings.end()) {  // as gpt --dtype trained it
    model.to(floating_dtype_flag("dtype", dtype->second));
  }
  load_checkpoint_parameters(file, model.named_parameters());
  return {config, std::move(tokenizer), std::move(model)};
}

Metadata tokenizer_settings(const TextTokenizer& tokenizer) {
  return {{"--tokenizer", tokenizer.kind()},
          {"--vocab-size", std::to_string(tokenizer.kind() == "bpe" ? tokenizer.size() : 0)},
          {"vocabulary", quote_setting(tokenizer.saved())}};
}

void save_tokenizer_model(const TextTokenizer& tokenizer, const std::string& folder, const std::string& flag) {
  const std::string path = folder + "/tokenizer.model";
  if (tokenizer.kind() != "bpe") {  // an earlier model's file would be taken for this one's tokenizer
    std::error_code ignored;
    std::filesystem::remove(path, ignored);
    return;
  }
  OutputFile file(flag, path);
  file.write(tokenizer.saved());
  file.commit();
}

void save_gpt_checkpoint(const std::string& folder, const GptConfig& config, const TextTokenizer& tokenizer,
                         const Sequential& model) {
  Metadata settings = gpt_model_settings(config);
  settings.merge(tokenizer_settings(tokenizer));
  create_output_folder("checkpoint", folder);
  save_checkpoint_parameters(folder + "/gpt.safetensors", model.named_parameters(), settings);
}

}  // namespace fuselab::examples
