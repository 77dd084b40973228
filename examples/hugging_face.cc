#include "examples/hugging_face.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <type_traits>

#include "autograd/functional.h"
#include "examples/gpt_flags.h"
#include "examples/output_file.h"
#include "tensor/factories.h"
#include "tensor/finite.h"

namespace fuselab::examples {
namespace {

using nlohmann::json;

// Where one of gpt_model's parameters is in a Hugging Face checkpoint: the tensors that hold it,
// stacked by rows (`rows` of each; empty: one tensor, all of it), or its transpose.
struct Placement {
  std::vector<std::string> names;
  std::vector<int64_t> rows;
  bool transposed = false;
};

// The placements of gpt_model(c)'s parameters, in the order of its parameters() (a tied head's
// weight is the embedding's, listed once).
std::vector<Placement> layout(const GptConfig& c) {
  std::vector<Placement> places;
  auto add = [&](const std::string& name) { places.push_back({{name}}); };
  if (c.arch == "gpt2") {
    auto conv1d = [&](const std::string& name) { places.push_back({{name + ".weight"}, {}, true}), add(name + ".bias"); };
    add("transformer.wte.weight"), add("transformer.wpe.weight");
    for (int64_t i = 0; i < c.layers; ++i) {
      const std::string h = "transformer.h." + std::to_string(i) + ".";
      add(h + "ln_1.weight"), add(h + "ln_1.bias"), conv1d(h + "attn.c_attn"), conv1d(h + "attn.c_proj");
      add(h + "ln_2.weight"), add(h + "ln_2.bias"), conv1d(h + "mlp.c_fc"), conv1d(h + "mlp.c_proj");
    }
    add("transformer.ln_f.weight"), add("transformer.ln_f.bias");
  } else {
    const AttentionHeads heads = gpt_attention_heads(c);
    const int64_t d = c.width / c.heads, hidden = gpt_mlp_hidden(c);
    add("model.embed_tokens.weight");
    for (int64_t i = 0; i < c.layers; ++i) {
      const std::string l = "model.layers." + std::to_string(i) + ".";
      add(l + "input_layernorm.weight");
      places.push_back({{l + "self_attn.q_proj.weight", l + "self_attn.k_proj.weight", l + "self_attn.v_proj.weight"},
                        {heads.heads * d, heads.kv_heads * d, heads.kv_heads * d}});
      add(l + "self_attn.o_proj.weight"), add(l + "post_attention_layernorm.weight");
      places.push_back({{l + "mlp.gate_proj.weight", l + "mlp.up_proj.weight"}, {hidden, hidden}});
      add(l + "mlp.down_proj.weight");
    }
    add("model.norm.weight");
  }
  if (!c.tie_embeddings) add("lm_head.weight");
  return places;
}

// --- config.json ----------------------------------------------------------------------------

json read_json(const std::string& path) {
  std::ifstream in(path);
  check(in.good(), "read_hugging_face: cannot open ", path);
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    fail("read_hugging_face: ", path, " is not JSON: ", e.what());
  }
}

// A field of config.json: its value, or `fallback` where the field is absent or null. Sizes must
// be integers, flags booleans: nothing is converted.
template <class T>
T field(const json& config, const std::string& path, const char* key, std::optional<T> fallback = std::nullopt) {
  const auto it = config.find(key);
  if (it == config.end() || it->is_null()) {
    check(fallback.has_value(), "read_hugging_face: ", path, " has no ", key);
    return *fallback;
  }
  const bool fits = std::is_same_v<T, std::string>  ? it->is_string()
                    : std::is_same_v<T, bool>       ? it->is_boolean()
                    : std::is_same_v<T, int64_t>    ? it->is_number_integer()
                                                    : it->is_number();
  check(fits, "read_hugging_face: ", path, ": ", key, " is ", it->dump(), ", not ",
        std::is_same_v<T, std::string> ? "a string" : std::is_same_v<T, bool> ? "a boolean"
        : std::is_same_v<T, int64_t> ? "an integer" : "a number");
  return it->get<T>();
}

// What FuseLab's model computes: it refuses the rest, naming the field.
void require(bool holds, const std::string& path, const std::string& what) {
  check(holds, "read_hugging_face: ", path, ": ", what, ", which FuseLab's model does not compute");
}

// A size or epsilon that must be above 0: GptConfig reads 0 or less as "the preset's own rule",
// which would put another number in place of the checkpoint's.
template <class T>
T positive(const json& config, const std::string& path, const char* key, std::optional<T> fallback = std::nullopt) {
  const T value = field<T>(config, path, key, fallback);
  check(value > 0, "read_hugging_face: ", path, ": ", key, " is ", value, ", not above 0");
  return value;
}

// A size that others are computed from (4 n_embd, the heads' width): below 2^31, so they cannot
// overflow before gpt's own ranges refuse it.
int64_t dimension(const json& config, const std::string& path, const char* key) {
  const auto value = positive<int64_t>(config, path, key);
  check(value < (int64_t(1) << 31), "read_hugging_face: ", path, ": ", key, " is ", value, ", not below 2^31");
  return value;
}

GptConfig gpt2_config(const json& j, const std::string& path) {
  GptConfig c;
  c.arch = "gpt2";
  c.vocab = field<int64_t>(j, path, "vocab_size"), c.context = field<int64_t>(j, path, "n_positions");
  c.width = dimension(j, path, "n_embd"), c.layers = field<int64_t>(j, path, "n_layer");
  c.heads = dimension(j, path, "n_head");
  c.mlp_hidden = positive<int64_t>(j, path, "n_inner", 4 * c.width);  // null: 4 n_embd
  c.norm_eps = positive<double>(j, path, "layer_norm_epsilon", 1e-5);
  c.tie_embeddings = field<bool>(j, path, "tie_word_embeddings", true);
  const auto activation = field<std::string>(j, path, "activation_function", "gelu_new");
  require(activation == "gelu_new" || activation == "gelu_pytorch_tanh", path,
          "activation_function is " + activation + " (FuseLab's GELU is the tanh form, gelu_new)");
  require(field<bool>(j, path, "scale_attn_weights", true), path, "scale_attn_weights is false");
  require(!field<bool>(j, path, "scale_attn_by_inverse_layer_idx", false), path,
          "scale_attn_by_inverse_layer_idx is true");
  require(!field<bool>(j, path, "add_cross_attention", false), path, "add_cross_attention is true");
  return c;
}

GptConfig llama_config(const json& j, const std::string& path) {
  GptConfig c;
  c.arch = "llama";
  c.vocab = field<int64_t>(j, path, "vocab_size"), c.context = field<int64_t>(j, path, "max_position_embeddings");
  c.width = dimension(j, path, "hidden_size"), c.layers = field<int64_t>(j, path, "num_hidden_layers");
  c.heads = dimension(j, path, "num_attention_heads");
  c.kv_heads = positive<int64_t>(j, path, "num_key_value_heads", c.heads);
  c.mlp_hidden = positive<int64_t>(j, path, "intermediate_size");
  c.norm_eps = positive<double>(j, path, "rms_norm_eps", 1e-6);
  c.tie_embeddings = field<bool>(j, path, "tie_word_embeddings", false);
  require(field<std::string>(j, path, "hidden_act", "silu") == "silu", path, "hidden_act is not silu");
  require(!field<bool>(j, path, "attention_bias", false), path, "attention_bias is true");
  require(!field<bool>(j, path, "mlp_bias", false), path, "mlp_bias is true");
  const auto head_dim = field<int64_t>(j, path, "head_dim", 0);  // 0: hidden_size / num_attention_heads
  require(head_dim == 0 || (c.width % c.heads == 0 && head_dim == c.width / c.heads), path,
          "head_dim times num_attention_heads is not hidden_size");
  // The rotary base: rope_theta (transformers 4) or rope_parameters (5); no scaling.
  c.rope_theta = field<double>(j, path, "rope_theta", 10000);
  if (const auto rope = j.find("rope_parameters"); rope != j.end() && rope->is_object()) {
    const double theta = field<double>(*rope, path, "rope_theta", c.rope_theta);
    check(theta == c.rope_theta || !j.contains("rope_theta") || j["rope_theta"].is_null(), "read_hugging_face: ",
          path, ": rope_theta ", c.rope_theta, " and rope_parameters.rope_theta ", theta, " differ");
    c.rope_theta = theta;
    require(field<std::string>(*rope, path, "rope_type", "default") == "default", path,
            "rope_parameters.rope_type is " + rope->value("rope_type", std::string()));
  }
  if (const auto scaling = j.find("rope_scaling"); scaling != j.end() && !scaling->is_null()) {
    require(field<std::string>(*scaling, path, "rope_type", "") == "default", path, "rope_scaling is " + scaling->dump());
  }
  return c;
}

GptConfig read_config(const std::string& path) {
  const json j = read_json(path);
  check(j.is_object(), "read_hugging_face: ", path, " is not a JSON object");
  const auto type = field<std::string>(j, path, "model_type");
  check(type == "gpt2" || type == "llama", "read_hugging_face: ", path, ": unknown architecture model_type '", type,
        "' (FuseLab reads gpt2 and llama)");
  const GptConfig read = type == "gpt2" ? gpt2_config(j, path) : llama_config(j, path);
  check(read.vocab > 0 && read.vocab <= INT32_MAX, "read_hugging_face: ", path, ": vocab_size ", read.vocab,
        " is not in [1, 2^31)");
  // Checked as gpt checks its flags (ranges, heads that split the width), as a checkpoint of gpt
  // is read back, so that every model read here can be saved and read again.
  GptConfig c = gpt_model_of_checkpoint(gpt_model_settings(read), path);
  c.vocab = read.vocab;
  return c;
}

json write_config(const GptConfig& c) {
  json j = {{"model_type", c.arch}, {"vocab_size", c.vocab}, {"tie_word_embeddings", c.tie_embeddings},
            {"torch_dtype", "float32"}, {"bos_token_id", nullptr}, {"eos_token_id", nullptr}};
  if (c.arch == "gpt2") {
    j.update({{"architectures", {"GPT2LMHeadModel"}}, {"n_positions", c.context}, {"n_embd", c.width},
              {"n_layer", c.layers}, {"n_head", c.heads}, {"n_inner", gpt_mlp_hidden(c)},
              {"activation_function", "gelu_new"}, {"layer_norm_epsilon", gpt_norm_eps(c)},
              {"attn_pdrop", c.dropout}, {"resid_pdrop", 0.0}, {"embd_pdrop", 0.0}});
  } else {
    j.update({{"architectures", {"LlamaForCausalLM"}}, {"max_position_embeddings", c.context},
              {"hidden_size", c.width}, {"num_hidden_layers", c.layers}, {"num_attention_heads", c.heads},
              {"num_key_value_heads", gpt_attention_heads(c).kv_heads}, {"head_dim", c.width / c.heads},
              {"intermediate_size", gpt_mlp_hidden(c)}, {"hidden_act", "silu"}, {"rms_norm_eps", gpt_norm_eps(c)},
              {"rope_theta", c.rope_theta}, {"rope_parameters", {{"rope_type", "default"}, {"rope_theta", c.rope_theta}}},
              {"attention_bias", false}, {"mlp_bias", false}, {"attention_dropout", c.dropout}});
  }
  return j;
}

// --- model.safetensors ----------------------------------------------------------------------

// Every tensor of the checkpoint (of each shard an index lists), and the first file's metadata.
Safetensors read_tensors(const std::string& folder) {
  const std::string single = folder + "/model.safetensors", index = single + ".index.json";
  if (!std::filesystem::exists(index) || std::filesystem::exists(single)) return load_safetensors(single);
  const json map = read_json(index).value("weight_map", json::object());
  check(map.is_object() && !map.empty(), "read_hugging_face: ", index, " has no weight_map");
  std::set<std::string> shards;
  for (const auto& [name, shard] : map.items()) {
    check(shard.is_string(), "read_hugging_face: ", index, ": the shard of ", name, " is not a file name");
    shards.insert(shard.get<std::string>());
  }
  Safetensors all;
  for (const std::string& shard : shards) {
    Safetensors part = load_safetensors(folder + "/" + shard);
    if (all.tensors.empty()) all.metadata = part.metadata;
    for (auto& [name, tensor] : part.tensors) {
      check(all.tensors.emplace(name, tensor).second, "read_hugging_face: ", name, " is in two shards of ", folder);
    }
  }
  return all;
}

bool ends_with(const std::string& s, const std::string& end) {
  return s.size() >= end.size() && s.compare(s.size() - end.size(), end.size(), end) == 0;
}

// Buffers that `transformers` saved in some versions and that hold no weight: GPT-2's causal
// masks and Llama's rotary frequencies.
bool is_buffer(const std::string& name) {
  return ends_with(name, ".attn.bias") || ends_with(name, ".attn.masked_bias") || ends_with(name, ".rotary_emb.inv_freq");
}

// The checkpoint's tensors by the layout's names: GPT2Model's, which lack the "transformer."
// prefix, get it; buffers go.
NamedTensors weights(NamedTensors tensors, const GptConfig& c, const std::string& file) {
  NamedTensors named;
  for (auto& [name, tensor] : tensors) {
    if (is_buffer(name)) continue;
    const bool prefixed = name.rfind("transformer.", 0) == 0 || name.rfind("lm_head.", 0) == 0;
    const std::string as = c.arch == "gpt2" && !prefixed ? "transformer." + name : name;
    check(named.emplace(as, tensor).second, "read_hugging_face: ", file, " holds ", as, " twice, with and without "
          "the transformer. prefix");
  }
  return named;
}

// Fills `param` from its placement's tensors, taking them out of `tensors`.
void fill(Tensor param, const Placement& place, NamedTensors& tensors, const std::string& file) {
  Shape expected = param.shape();
  if (place.transposed) std::swap(expected[0], expected[1]);
  int64_t row = 0;
  for (size_t i = 0; i < place.names.size(); ++i) {
    const std::string& name = place.names[i];
    const auto it = tensors.find(name);
    check(it != tensors.end(), "read_hugging_face: ", file, " has no tensor ", name);
    const Tensor value = it->second.to(DType::Float32);
    tensors.erase(it);
    if (!place.rows.empty()) expected[0] = place.rows[i];
    check(value.shape() == expected, "read_hugging_face: ", file, ": ", name, " is ", value.shape(),
          " where config.json's sizes make it ", expected);
    const int64_t non_finite = count_non_finite(value);
    check(non_finite == 0, "read_hugging_face: ", file, ": ", name, " holds ", non_finite, " NaN or infinite value(s)");
    const int64_t rows = place.rows.empty() ? param.size(0) : place.rows[i];
    param.slice(row, row + rows).copy_(place.transposed ? transpose(value) : value);
    row += rows;
  }
}

// A tied model's checkpoint may hold the head's weight anyway (GPT-2's did): it must be the
// embedding's.
void take_tied_head(NamedTensors& tensors, const Tensor& embedding, const std::string& file) {
  const auto head = tensors.find("lm_head.weight");
  if (head == tensors.end()) return;
  check(head->second.shape() == embedding.shape() &&
            head->second.to(DType::Float32).to_vector<float>() == embedding.to_vector<float>(),
        "read_hugging_face: ", file, ": lm_head.weight differs from the token embedding, but config.json ties them");
  tensors.erase(head);
}

}  // namespace

HuggingFaceModel read_hugging_face(const std::string& folder) {
  check(std::filesystem::is_directory(folder), "read_hugging_face: ", folder, " is not a folder");
  const GptConfig config = read_config(folder + "/config.json");
  Generator init(0);
  HuggingFaceModel out{config, gpt_model(config, init), {}};
  Safetensors file = read_tensors(folder);
  out.metadata = file.metadata;
  const std::string name = folder + "/model.safetensors";
  NamedTensors tensors = weights(std::move(file.tensors), config, name);
  const std::vector<Tensor> params = out.model.parameters();
  const std::vector<Placement> places = layout(config);
  check(params.size() == places.size(), "read_hugging_face: the layout of ", config.arch, " has ", places.size(),
        " places for ", params.size(), " parameters");
  for (size_t i = 0; i < params.size(); ++i) fill(params[i], places[i], tensors, name);
  if (config.tie_embeddings) take_tied_head(tensors, params[0], name);
  if (!tensors.empty()) {
    std::string left;
    for (const auto& entry : tensors) left += (left.empty() ? "" : ", ") + entry.first;
    fail("read_hugging_face: ", name, " holds tensors FuseLab's ", config.arch, " model has no place for: ", left);
  }
  return out;
}

void write_hugging_face(const std::string& folder, const GptConfig& config, const Sequential& model,
                        const Metadata& metadata) {
  check(config.experts == 0, "hf_checkpoint: --export writes GPT2LMHeadModel and LlamaForCausalLM, and this model "
        "has --experts=", config.experts, " (a mixture of experts, which neither holds)");
  const std::vector<Tensor> params = model.parameters();
  const std::vector<Placement> places = layout(config);
  check(params.size() == places.size(), "write_hugging_face: the model has ", params.size(),
        " parameters where a ", config.arch, " model of its config has ", places.size());
  NamedTensors tensors;
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor value = params[i].to(Device::cpu()).to(DType::Float32);
    const Placement& place = places[i];
    if (place.transposed) {
      tensors[place.names[0]] = transpose(value);
      continue;
    }
    int64_t row = 0;
    for (size_t n = 0; n < place.names.size(); ++n) {
      const int64_t rows = place.rows.empty() ? value.size(0) : place.rows[n];
      tensors[place.names[n]] = value.slice(row, row + rows).clone();
      row += rows;
    }
  }
  create_output_folder("export", folder);
  Metadata file_metadata = metadata;
  file_metadata["format"] = "pt";
  save_safetensors(folder + "/model.safetensors", tensors, file_metadata);
  OutputFile file("export", folder + "/config.json");
  file.write(write_config(config).dump(2), "\n");
  file.commit();
}

}  // namespace fuselab::examples
