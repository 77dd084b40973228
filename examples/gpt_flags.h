// The GPT's model flags (GptConfig, examples/models.h) and their checks: the architecture, its size
// and, for llama, its heads and rotary base.
#pragma once

#include <initializer_list>
#include <string>

#include "examples/flags.h"
#include "examples/models.h"
#include "tensor/safetensors.h"

namespace fuselab::examples {

void add_gpt_model_flags(Flags& flags, GptConfig& model);
// After Flags::parse: throws fuselab::Error, naming the flags, for a model the flags cannot make.
void check_gpt_model_flags(const Flags& flags, const GptConfig& model);
// Throws, naming the first, where any of `names` was given without --experts (or with 0): they
// choose among experts.
void refuse_without_experts(const Flags& flags, const GptConfig& model, std::initializer_list<const char*> names);

// The settings gpt records in its checkpoints for its model: each flag above and its value as
// text ("--context" -> "64"), exact for every value, the presets' rules applied (--kv-heads,
// --mlp-hidden and --norm-eps as the model has them, never 0).
Metadata gpt_model_settings(const GptConfig& model);

// The model a checkpoint of gpt (at `path`) was saved with: its recorded settings (the flags
// above, as "--context" -> "64") read and checked as gpt reads its command line; vocab is left
// to the caller. A setting the checkpoint lacks is an Error naming it and the file.
GptConfig gpt_model_of_checkpoint(const Metadata& settings, const std::string& path);

}  // namespace fuselab::examples
