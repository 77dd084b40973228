// Hugging Face checkpoints of the gpt programs' models: a folder with config.json and
// model.safetensors (or shards listed in model.safetensors.index.json) in the layout of
// `transformers`' GPT2LMHeadModel (gpt2) or LlamaForCausalLM (llama).
//
// The two layouts hold the same numbers as gpt_model's parameters, arranged differently:
//   GPT-2   transformer.wte / wpe, transformer.h.<i>.{ln_1, attn.c_attn, attn.c_proj, ln_2,
//           mlp.c_fc, mlp.c_proj}, transformer.ln_f, lm_head (absent when tied). Its Linears are
//           Conv1D layers, weights stored [in, out]: the transpose of FuseLab's [out, in].
//   Llama   model.embed_tokens, model.layers.<i>.{input_layernorm, self_attn.{q,k,v,o}_proj,
//           post_attention_layernorm, mlp.{gate,up,down}_proj}, model.norm, lm_head. FuseLab's
//           one qkv Linear is q_proj, k_proj and v_proj stacked by rows, and its gate|up Linear
//           gate_proj and up_proj; the rotary embedding is the same (rotate_half).
// Reading refuses, naming the file and what it found, every checkpoint FuseLab's model cannot
// compute exactly: another architecture, another activation, biases or rope scaling it does not
// have, a tensor missing, a tensor of the wrong shape and a tensor it has no place for.
#pragma once

#include <string>

#include "examples/models.h"
#include "tensor/safetensors.h"

namespace fuselab::examples {

struct HuggingFaceModel {
  GptConfig config;         // vocab included
  Sequential model;         // gpt_model(config) holding the checkpoint's weights (float32)
  Metadata metadata;        // model.safetensors' metadata (FuseLab's tokenizer, when it wrote it)
};

HuggingFaceModel read_hugging_face(const std::string& folder);

// Writes config.json and model.safetensors (float32) into `folder`, creating it; `metadata` goes
// into model.safetensors' own beside {"format": "pt"}.
void write_hugging_face(const std::string& folder, const GptConfig& config, const Sequential& model,
                        const Metadata& metadata = {});

}  // namespace fuselab::examples
