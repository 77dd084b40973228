// The GPT's model flags (GptConfig, examples/models.h) and their checks: the architecture, its size
// and, for llama, its heads and rotary base.
#pragma once

#include "examples/flags.h"
#include "examples/models.h"

namespace fuselab::examples {

void add_gpt_model_flags(Flags& flags, GptConfig& model);
// After Flags::parse: throws fuselab::Error, naming the flags, for a model the flags cannot make.
void check_gpt_model_flags(const GptConfig& model);

}  // namespace fuselab::examples
