// Hugging Face checkpoints (examples/hugging_face.h): FuseLab's model of a checkpoint that
// `transformers` made computes the logits `transformers` recorded for it (tests/data/hugging_face,
// made by make_checkpoints.py), a model written and read back is the same model bit for bit, and
// every checkpoint FuseLab cannot compute exactly is an error naming what it found.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "examples/hugging_face.h"
#include "examples/language_model.h"
#include "tensor/factories.h"
#include "tests/expect_error.h"

namespace fuselab::examples {
namespace {

using testing::expect_error;

const std::string kData = "tests/data/hugging_face/";

// The model's logits [batch, T, vocab] for ids [batch, T] (a model that ends in its loss without it).
std::vector<float> logits(Sequential& model, const Tensor& ids) {
  model.eval();
  if (!ends_in_loss(model)) return model(ids).to_vector<float>();
  Sequential without_loss = model.slice(0, -1);
  return without_loss(ids).to_vector<float>();
}

class TransformersMade : public ::testing::TestWithParam<std::string> {};

TEST_P(TransformersMade, LogitsMatchTheOnesTransformersComputed) {
  HuggingFaceModel hf = read_hugging_face(kData + GetParam());
  const Safetensors expected = load_safetensors(kData + GetParam() + "/expected.safetensors");
  const std::vector<float> ours = logits(hf.model, expected.tensors.at("input_ids"));
  const std::vector<float> theirs = expected.tensors.at("logits").to_vector<float>();
  ASSERT_EQ(ours.size(), theirs.size());
  double worst = 0, largest = 0;
  for (size_t i = 0; i < ours.size(); ++i) {
    worst = std::max(worst, double(std::abs(ours[i] - theirs[i])));
    largest = std::max(largest, double(std::abs(theirs[i])));
  }
  EXPECT_LT(worst, 1e-4) << GetParam() << ": logits up to " << largest;
  std::printf("%s: logits up to %.3f, FuseLab's within %.2g of transformers'\n", GetParam().c_str(), largest, worst);
  EXPECT_GT(largest, 1.0) << "logits this small would not tell a misplaced tensor";
}

INSTANTIATE_TEST_SUITE_P(Checkpoints, TransformersMade, ::testing::Values("gpt2", "llama", "llama_tied", "fuselab_gpt2", "fuselab_llama"));

TEST(HuggingFace, ConfigOfTheCheckpointIsFuseLabs) {
  const GptConfig llama = read_hugging_face(kData + "llama").config;
  EXPECT_EQ(llama.arch, "llama");
  EXPECT_EQ(llama.kv_heads, 2);
  EXPECT_EQ(llama.mlp_hidden, 80);
  EXPECT_EQ(llama.rope_theta, 500000);
  EXPECT_EQ(llama.norm_eps, 1e-5);
  EXPECT_FALSE(llama.tie_embeddings);
  EXPECT_TRUE(read_hugging_face(kData + "llama_tied").config.tie_embeddings);
  EXPECT_TRUE(read_hugging_face(kData + "gpt2").config.tie_embeddings);
}

std::string temporary_folder(const std::string& name) {
  const char* root = std::getenv("TEST_TMPDIR");
  const std::string folder = std::string(root ? root : "/tmp") + "/" + name;
  std::filesystem::remove_all(folder);
  return folder;
}

TEST(HuggingFace, WrittenAndReadBackIsTheSameModel) {
  for (const std::string arch : {"gpt2", "llama"}) {
    for (const bool tied : {false, true}) {
      GptConfig c;
      c.arch = arch, c.vocab = 50, c.context = 12, c.width = 24, c.heads = 4, c.layers = 2, c.tie_embeddings = tied;
      if (arch == "llama") c.kv_heads = 1, c.mlp_hidden = 40, c.rope_theta = 1234.5, c.norm_eps = 3e-6;
      Generator gen(7);
      Sequential model = gpt_model(c, gen);
      const std::string folder = temporary_folder(arch + (tied ? "_tied" : ""));
      write_hugging_face(folder, c, model, {{"note", "kept"}});
      HuggingFaceModel back = read_hugging_face(folder);
      EXPECT_EQ(back.metadata.at("note"), "kept");
      EXPECT_EQ(back.config.tie_embeddings, tied);
      EXPECT_EQ(back.config.rope_theta, c.rope_theta);
      EXPECT_EQ(back.config.norm_eps, arch == "llama" ? 3e-6 : 1e-5);
      const NamedTensors ours = model.named_parameters(), theirs = back.model.named_parameters();
      ASSERT_EQ(ours.size(), theirs.size());
      for (const auto& [name, value] : ours) {
        EXPECT_EQ(value.to_vector<float>(), theirs.at(name).to_vector<float>()) << arch << " " << name;
      }
    }
  }
}

// A checkpoint split into two shards and an index, as `transformers` saves a large model.
TEST(HuggingFace, ShardsReadAsOneFile) {
  GptConfig c;
  c.arch = "llama", c.vocab = 40, c.width = 16, c.heads = 2, c.layers = 2;
  Generator gen(3);
  Sequential model = gpt_model(c, gen);
  const std::string folder = temporary_folder("sharded");
  write_hugging_face(folder, c, model);
  const Safetensors whole = load_safetensors(folder + "/model.safetensors");
  std::filesystem::remove(folder + "/model.safetensors");
  NamedTensors shards[2];
  nlohmann::json map;
  for (const auto& [name, tensor] : whole.tensors) {
    const int shard = name.find("layers.1.") != std::string::npos ? 1 : 0;
    shards[shard][name] = tensor;
    map[name] = "model-0000" + std::to_string(shard + 1) + "-of-00002.safetensors";
  }
  for (int i = 0; i < 2; ++i) {
    save_safetensors(folder + "/model-0000" + std::to_string(i + 1) + "-of-00002.safetensors", shards[i]);
  }
  std::ofstream(folder + "/model.safetensors.index.json") << nlohmann::json{{"weight_map", map}}.dump();
  HuggingFaceModel back = read_hugging_face(folder);
  for (const auto& [name, value] : model.named_parameters()) {
    EXPECT_EQ(value.to_vector<float>(), back.model.named_parameters().at(name).to_vector<float>()) << name;
  }
  // A tensor in two shards is an error, not the later one silently.
  shards[1]["model.norm.weight"] = whole.tensors.at("model.norm.weight");
  save_safetensors(folder + "/model-00002-of-00002.safetensors", shards[1]);
  expect_error([&] { read_hugging_face(folder); }, {"model.norm.weight is in two shards"});
}

// A copy of a fixture, changed by `edit_config` and `edit_tensors`, for the bad inputs.
std::string changed_copy(const std::string& fixture, const std::function<void(nlohmann::json&)>& edit_config,
                         const std::function<void(NamedTensors&)>& edit_tensors = {}) {
  const std::string folder = temporary_folder("changed_" + fixture);
  std::filesystem::create_directories(folder);
  nlohmann::json config = nlohmann::json::parse(std::ifstream(kData + fixture + "/config.json"));
  edit_config(config);
  std::ofstream(folder + "/config.json") << config.dump();
  Safetensors file = load_safetensors(kData + fixture + "/model.safetensors");
  if (edit_tensors) edit_tensors(file.tensors);
  save_safetensors(folder + "/model.safetensors", file.tensors, file.metadata);
  return folder;
}

TEST(HuggingFace, WhatFuseLabCannotComputeIsAnErrorNamingIt) {
  auto same = [](nlohmann::json&) {};
  auto read = [](const std::string& folder) { return [folder] { read_hugging_face(folder); }; };
  expect_error(read(changed_copy("gpt2", [](nlohmann::json& c) { c["n_embd"] = 16; })),
               {"transformer.wte.weight is [64, 32]", "config.json's sizes make it [64, 16]"});
  expect_error(read(changed_copy("llama", [](nlohmann::json& c) { c["num_key_value_heads"] = 4; })),
               {"model.layers.0.self_attn.k_proj.weight is [16, 32]", "[32, 32]"});
  expect_error(read(changed_copy("llama", same, [](NamedTensors& t) { t.erase("model.layers.1.mlp.up_proj.weight"); })),
               {"has no tensor model.layers.1.mlp.up_proj.weight"});
  expect_error(read(changed_copy("llama", same,
                                 [](NamedTensors& t) { t["model.norm.weight"] = full({32}, NAN, DType::Float32); })),
               {"model.safetensors", "model.norm.weight holds 32 NaN or infinite value(s)"});
  expect_error(read(changed_copy("llama", same, [](NamedTensors& t) { t["model.layers.0.extra"] = zeros({2}); })),
               {"no place for: model.layers.0.extra"});
  expect_error(read(changed_copy("gpt2", [](nlohmann::json& c) { c["model_type"] = "bert"; })),
               {"unknown architecture model_type 'bert'", "gpt2 and llama"});
  expect_error(read(changed_copy("gpt2", [](nlohmann::json& c) { c["activation_function"] = "relu"; })),
               {"activation_function is relu", "does not compute"});
  expect_error(read(changed_copy("llama", [](nlohmann::json& c) { c["attention_bias"] = true; })),
               {"attention_bias is true"});
  expect_error(read(changed_copy("llama", [](nlohmann::json& c) { c["rope_parameters"]["rope_type"] = "yarn"; })),
               {"rope_type is yarn"});
  expect_error(read(changed_copy("llama", [](nlohmann::json& c) { c["num_attention_heads"] = 3; })),
               {"head_dim times num_attention_heads is not hidden_size"});
  expect_error(read(changed_copy("llama", [](nlohmann::json& c) { c["num_attention_heads"] = 3, c.erase("head_dim"); })),
               {"config.json", "--width=32 does not split evenly over --heads=3"});
  expect_error(read(changed_copy("llama", [](nlohmann::json& c) { c.erase("hidden_size"); })), {"has no hidden_size"});
  expect_error(read(changed_copy("gpt2", [](nlohmann::json& c) { c["n_layer"] = "two"; })),
               {"n_layer is \"two\", not an integer"});
  expect_error(read(changed_copy("gpt2", [](nlohmann::json& c) { c["n_layer"] = 2.5; })), {"n_layer is 2.5, not an integer"});
  expect_error(read(changed_copy("gpt2", [](nlohmann::json& c) { c["n_head"] = 0; })), {"config.json", "n_head is 0, not above 0"});
  expect_error(read(changed_copy("llama", [](nlohmann::json& c) { c["num_hidden_layers"] = 100000; })),
               {"--layers: 100000 is outside"});
  expect_error(read(changed_copy("llama", [](nlohmann::json& c) { c["tie_word_embeddings"] = 1; })),
               {"tie_word_embeddings is 1, not a boolean"});
  expect_error(read(changed_copy("llama_tied", same, [](NamedTensors& t) { t["lm_head.weight"] = zeros({64, 32}); })),
               {"lm_head.weight differs from the token embedding"});
  expect_error(read(changed_copy("llama", [](nlohmann::json& c) { c["num_key_value_heads"] = -2; })),
               {"config.json: num_key_value_heads is -2, not above 0"});
  expect_error(read(changed_copy("llama", [](nlohmann::json& c) { c["intermediate_size"] = 0; })),
               {"intermediate_size is 0, not above 0"});
  expect_error(read(changed_copy("llama", [](nlohmann::json& c) { c["rms_norm_eps"] = 0.0; })), {"rms_norm_eps is 0"});
  expect_error(read(changed_copy("gpt2", [](nlohmann::json& c) { c["n_inner"] = -1; })), {"n_inner is -1, not above 0"});
  // The width, not the n_inner it would give (4 n_embd), is what a config with n_embd 0 gets wrong.
  expect_error(read(changed_copy("gpt2", [](nlohmann::json& c) { c["n_embd"] = 0, c["n_inner"] = nullptr; })),
               {"n_embd is 0, not above 0"});
  expect_error(read(changed_copy("llama", [](nlohmann::json& c) { c["hidden_size"] = int64_t(1) << 62; })),
               {"hidden_size is 4611686018427387904, not below 2^31"});
  expect_error(read(changed_copy("gpt2", [](nlohmann::json& c) { c["layer_norm_epsilon"] = 0.0; })),
               {"layer_norm_epsilon is 0"});
  expect_error(read(changed_copy("llama", [](nlohmann::json& c) {
                 c["rope_theta"] = 10000.0, c["rope_parameters"]["rope_theta"] = 500.0;
               })),
               {"rope_theta 10000 and rope_parameters.rope_theta 500 differ"});
  expect_error(read(kData + "none"), {"tests/data/hugging_face/none is not a folder"});
}

}  // namespace
}  // namespace fuselab::examples
