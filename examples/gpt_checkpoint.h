// A trained model of the gpt programs as its checkpoint holds it: the model's settings (the flags
// of examples/gpt_flags.h), its tokenizer and its parameters, for the programs that use a model
// without training it (generate, hf_checkpoint).
#pragma once

#include <string>

#include "examples/models.h"
#include "examples/text_tokens.h"

namespace fuselab::examples {

struct GptCheckpoint {
  GptConfig config;  // vocab: the tokenizer's
  TextTokenizer tokenizer;
  Sequential model;  // on the CPU
};

// What a checkpoint records of its tokenizer, beside the model's settings (gpt_model_settings):
// --tokenizer, --vocab-size (0 but for BPE) and the "vocabulary" it is rebuilt from, quoted.
Metadata tokenizer_settings(const TextTokenizer& tokenizer);
// A BPE model as SentencePiece's own file, `folder`/tokenizer.model, for tools that read one
// (written through OutputFile, naming `flag` in its errors); for other tokenizers it removes an
// earlier model's tokenizer.model, which would be taken for this one's.
void save_tokenizer_model(const TextTokenizer& tokenizer, const std::string& folder, const std::string& flag);

// From `folder`/gpt.safetensors, as gpt --checkpoint=folder saved it.
GptCheckpoint load_gpt_checkpoint(const std::string& folder);
// Into `folder`/gpt.safetensors (creating the folder): the model alone, which load_gpt_checkpoint
// reads and a training run cannot resume from (there is no optimizer state).
void save_gpt_checkpoint(const std::string& folder, const GptConfig& config, const TextTokenizer& tokenizer,
                         const Sequential& model);

}  // namespace fuselab::examples
