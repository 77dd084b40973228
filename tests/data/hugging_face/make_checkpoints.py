"""Makes the tiny Hugging Face checkpoints that tests/hugging_face_test.cc reads.

gpt2, llama and llama_tied hold what `transformers`' `save_pretrained` writes (config.json,
model.safetensors) for random models: every parameter random (seeded), norms and biases included,
so that a tensor mapped to the wrong place changes the logits. fuselab_gpt2 and fuselab_llama go
the other way: models FuseLab trained briefly and exported (--logits-of below). Each folder also
holds expected.safetensors: int64 input_ids [2, 10] and the float32 logits [2, 10, vocab] that
`transformers` computed for them. Run once, with `transformers` and PyTorch in a virtualenv;
nothing in the build or the tests needs either:

    python3 -m venv /tmp/hfvenv && /tmp/hfvenv/bin/pip install torch transformers safetensors
    /tmp/hfvenv/bin/python tests/data/hugging_face/make_checkpoints.py tests/data/hugging_face

and for the exported ones (gpt's flags: --steps=30 --batch=4 --context=16 --width=32 --heads=4
--layers=2, with --arch=llama --tokenizer=bpe --vocab-size=512 for fuselab_llama):

    bazel-bin/examples/gpt FLAGS --checkpoint=/tmp/ck && \
      bazel-bin/examples/hf_checkpoint --checkpoint=/tmp/ck --export=tests/data/hugging_face/fuselab_gpt2
    /tmp/hfvenv/bin/python tests/data/hugging_face/make_checkpoints.py --logits-of tests/data/hugging_face/fuselab_gpt2
"""
import os
import sys

import torch
import transformers
from safetensors.torch import save_file

VOCAB = 64


def randomize(model, seed):
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            noise = torch.randn(parameter.shape, generator=generator)
            is_gain = parameter.dim() == 1 and name.endswith("weight")  # a norm's gain
            parameter.copy_(1 + 0.1 * noise if is_gain else 0.3 * noise)


def save_logits(model, folder, seed):
    model.eval()
    ids = torch.randint(0, model.config.vocab_size, (2, 10), generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():
        logits = model(input_ids=ids).logits.float()
    save_file({"input_ids": ids, "logits": logits.contiguous()}, os.path.join(folder, "expected.safetensors"))


def save(model, folder, seed):
    randomize(model, seed)
    os.makedirs(folder, exist_ok=True)
    model.save_pretrained(folder)
    os.remove(os.path.join(folder, "generation_config.json"))  # sampling defaults, not the model
    save_logits(model, folder, seed + 1)


def main(root):
    torch.manual_seed(0)
    gpt2 = transformers.GPT2Config(vocab_size=VOCAB, n_positions=32, n_embd=32, n_layer=2, n_head=4,
                                   bos_token_id=None, eos_token_id=None)
    save(transformers.GPT2LMHeadModel(gpt2), os.path.join(root, "gpt2"), seed=1)
    llama = transformers.LlamaConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=80, num_hidden_layers=2,
                                     num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                     rms_norm_eps=1e-5, rope_parameters={"rope_type": "default", "rope_theta": 500000.0})
    save(transformers.LlamaForCausalLM(llama), os.path.join(root, "llama"), seed=2)
    tied = transformers.LlamaConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                    num_attention_heads=4, num_key_value_heads=1, max_position_embeddings=64,
                                    tie_word_embeddings=True)
    save(transformers.LlamaForCausalLM(tied), os.path.join(root, "llama_tied"), seed=3)


if __name__ == "__main__":
    if sys.argv[1] == "--logits-of":
        for exported in sys.argv[2:]:
            save_logits(transformers.AutoModelForCausalLM.from_pretrained(exported), exported, seed=5)
    else:
        main(sys.argv[1])
