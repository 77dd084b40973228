"""PyTorch peer of //tools:bench for the bench's own blocks (mlp_block, norm_block), mnist_mlp, attention,
gpt, llama and moe_block:
the same shapes, timed the same way (warm-up, then medians over --iters, forward under no_grad,
forward + backward from out.sum()), written with the same JSON fields. Eager PyTorch fills the
unfused_* fields; torch.compile (PyTorch 2.0 and later) fills the fused_* fields, which are null
without it (or when compiling fails: compile_error then holds why).

    python3 bench/peers/pytorch_bench.py --model mlp_block --tokens 4096 --hidden 256 --threads 1 --json out.json
    python3 bench/peers/pytorch_bench.py --model attention --batch 4 --heads 4 --tokens 1024 --hidden 256 --causal 1 --threads 1
    python3 bench/peers/pytorch_bench.py --model gpt --tokens 32 --hidden 128 --threads 2

--model attention mirrors `//tools:bench --model attention`: qkv [batch, tokens, (heads + 2 kv_heads) d]
= [q | k | v] requiring grad, --heads heads of dim d = hidden / heads sharing --kv-heads key and
value heads (0: --heads), q and k rotated first with --rope 1 (Hugging Face Llama's rotate_half),
loss out.sum(), out [B, T, C].
It times three variants on the same qkv:
  unfused_*  eager math attention: q k^T / sqrt(d), masked_fill(-inf) above the diagonal when
             --causal 1, softmax, dropout(0), p @ v
  sdpa_*     F.scaled_dot_product_attention(q, k, v, is_causal=..., enable_gqa=...) (null before PyTorch 2.0)
  fused_*    torch.compile of the math version (null, with compile_error, if it fails)
speedup_fwd_bwd is unfused / fused as for the blocks; sdpa_speedup_fwd_bwd is unfused / sdpa.
sizes holds {"batch", "causal", "heads"} as the bench writes them.

--model gpt mirrors `//tools:bench --model gpt` (examples/models.cc's gpt_model): --tokens windows
of --gpt-context token ids, token + learned position embeddings, --layers pre-norm blocks
(LayerNorm, QKV Linear, causal attention, projection + residual, LayerNorm, Linear, GELU-tanh,
Linear + residual), final LayerNorm and LM head without bias over a vocabulary of 112, loss the cross-entropy
against random next ids. unfused_* is eager with math attention, sdpa_* eager with
F.scaled_dot_product_attention, fused_* torch.compile of the math version. --model llama mirrors
`//tools:bench --model llama` (gpt --arch=llama) the same way, written as Hugging Face's Llama:
token embedding, RMSNorm, QKV Linear without bias, rotary q and k, grouped-query attention over
heads / 2 kv heads, o Linear + residual, RMSNorm, gate|up Linear, silu(gate) * up, down Linear +
residual, final RMSNorm and LM head without bias.

--model moe_block mirrors `//tools:bench --model moe_block`: x [tokens, hidden] requiring grad through
Hugging Face Mixtral's sparse MoE block (MixtralMoeBlock below: a loop over the experts with index
gathers and index_add) of --experts SwiGLU experts of --expert-hidden, --top-k each; loss out.sum().

    python3 bench/peers/pytorch_bench.py --model moe_block --tokens 4096 --hidden 256 --experts 8 --top-k 2 --expert-hidden 512 --threads 2

--model mnist_mlp mirrors `//tools:bench --model mnist_mlp --step`: Linear 784->--hidden, GELU-tanh,
Linear --hidden->--hidden, GELU-tanh, Linear --hidden->10 on --tokens rows of standard normal
features, cross-entropy against random labels. Besides forward and forward + backward it times a
training step as a loop runs it (zero_grad(set_to_none), forward, loss, backward, SGD lr 0.01 step):
unfused_step_ms for eager, fused_step_ms for torch.compile of the model (the optimizer stays eager).
The bench's --tokens 128 and --hidden 1024 are its defaults only there: pass them here.

    python3 bench/peers/pytorch_bench.py --model mnist_mlp --tokens 128 --hidden 1024 --threads 1

Needs PyTorch (Debian's python3-torch 1.13, or pip); no FuseLab build or test needs it.
"""
import argparse
import json
import math
import os
import statistics
import sys
import time


def _threads_from_argv():
    """--threads N, read before torch loads: Debian's torch runs its GEMMs in OpenBLAS's pthreads
    build, which takes its thread count from the environment when it loads and ignores
    torch.set_num_threads (with only the latter, "--threads 1" ran 2 GEMM threads)."""
    for i, arg in enumerate(sys.argv):
        if arg == "--threads" and i + 1 < len(sys.argv):
            return sys.argv[i + 1]
        if arg.startswith("--threads="):
            return arg.split("=", 1)[1]
    return None


if _threads_from_argv() not in (None, "0"):
    os.environ["OPENBLAS_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = _threads_from_argv()

import torch  # noqa: E402  (after the thread count is in the environment)
import torch.nn.functional as F


class MlpBlock(torch.nn.Module):
    """RMSNorm(x + Linear2(GELU(Linear1(x) + b1)) + b2), GELU in its tanh form."""

    def __init__(self, h):
        super().__init__()
        self.fc1 = torch.nn.Linear(h, 4 * h)
        self.fc2 = torch.nn.Linear(4 * h, h)
        self.weight = torch.nn.Parameter(torch.ones(h))

    def forward(self, x, residual):
        h = residual + self.fc2(F.gelu(self.fc1(x), approximate="tanh"))
        return h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight, None


class MnistMlp(torch.nn.Module):
    """Linear, GELU, Linear, GELU, Linear over 784 features into 10 classes; forward(x, labels)
    returns (loss, None)."""

    def __init__(self, hidden):
        super().__init__()
        gelu = torch.nn.GELU(approximate="tanh")
        self.layers = torch.nn.Sequential(torch.nn.Linear(784, hidden), gelu, torch.nn.Linear(hidden, hidden), gelu,
                                          torch.nn.Linear(hidden, 10))

    def forward(self, x, labels):
        return F.cross_entropy(self.layers(x), labels), None


class NormBlock(torch.nn.Module):
    """h = x + r; out = RMSNorm(h); h is returned too."""

    def __init__(self, h):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(h))

    def forward(self, x, residual):
        h = x + residual
        return h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight, h


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def rotary(q, k, theta=10000.0):
    """Hugging Face Llama's apply_rotary_pos_emb on q and k [B, heads, T, d], positions 0..T-1."""
    t, d = q.shape[-2], q.shape[-1]
    inv_freq = 1.0 / (theta ** (torch.arange(0, d, 2, device=q.device, dtype=torch.float32) / d))
    freqs = torch.outer(torch.arange(t, device=q.device, dtype=torch.float32), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos().to(q.dtype), emb.sin().to(q.dtype)
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


class MathAttention(torch.nn.Module):
    """Eager attention over qkv [B, T, (H + 2 KV) d] = [q | k | v]: softmax(q k^T / sqrt(d)) v per head,
    each key and value head shared by H / KV query heads, q and k rotated first with rope."""

    def __init__(self, heads, causal, kv_heads=None, rope=False):
        super().__init__()
        self.heads, self.causal, self.rope = heads, causal, rope
        self.kv_heads = kv_heads or heads

    def split(self, qkv):
        b, t, width = qkv.shape
        d = width // (self.heads + 2 * self.kv_heads)
        q, k, v = qkv.split([self.heads * d, self.kv_heads * d, self.kv_heads * d], dim=-1)
        q, k, v = (x.view(b, t, -1, d).transpose(1, 2) for x in (q, k, v))
        return rotary(q, k) + (v,) if self.rope else (q, k, v)

    def merge(self, y):
        b, h, t, d = y.shape
        return y.transpose(1, 2).reshape(b, t, h * d)

    def forward(self, qkv, _):
        q, k, v = self.split(qkv)
        group = self.heads // self.kv_heads
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if self.causal:
            t = s.shape[-1]
            s = s.masked_fill(torch.ones(t, t, dtype=torch.bool, device=s.device).triu(1), float("-inf"))
        p = F.dropout(torch.softmax(s, dim=-1), 0.0)
        return self.merge(p @ v), None


class SdpaAttention(MathAttention):
    """The same attention through F.scaled_dot_product_attention."""

    def forward(self, qkv, _):
        q, k, v = self.split(qkv)
        gqa = {"enable_gqa": True} if self.kv_heads != self.heads else {}
        return self.merge(F.scaled_dot_product_attention(q, k, v, is_causal=self.causal, **gqa)), None


class GptBlock(torch.nn.Module):
    """x + proj(attention(qkv(LN(x)))), then x + fc2(GELU(fc1(LN(x))))."""

    def __init__(self, width, heads, attention):
        super().__init__()
        self.ln1, self.ln2 = torch.nn.LayerNorm(width), torch.nn.LayerNorm(width)
        self.qkv, self.proj = torch.nn.Linear(width, 3 * width), torch.nn.Linear(width, width)
        self.fc1, self.fc2 = torch.nn.Linear(width, 4 * width), torch.nn.Linear(4 * width, width)
        self.attention = attention(heads, True)

    def forward(self, x):
        x = x + self.proj(self.attention(self.qkv(self.ln1(x)), None)[0])
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))


class Gpt(torch.nn.Module):
    """The GPT of examples/models.cc; forward(ids, next_ids) returns (loss, None)."""

    def __init__(self, vocab, context, width, layers, heads, attention):
        super().__init__()
        self.tokens, self.positions = torch.nn.Embedding(vocab, width), torch.nn.Embedding(context, width)
        self.blocks = torch.nn.Sequential(*[GptBlock(width, heads, attention) for _ in range(layers)])
        self.ln, self.head = torch.nn.LayerNorm(width), torch.nn.Linear(width, vocab, bias=False)

    def forward(self, ids, next_ids):
        x = self.tokens(ids) + self.positions.weight[: ids.shape[1]]
        logits = self.head(self.ln(self.blocks(x)))
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), next_ids.view(-1)), None


class RMSNorm(torch.nn.Module):
    """Hugging Face Llama's LlamaRMSNorm: weight * x / sqrt(mean(x^2) + eps)."""

    def __init__(self, width, eps=1e-6):
        super().__init__()
        self.weight, self.eps = torch.nn.Parameter(torch.ones(width)), eps

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


class LlamaBlock(torch.nn.Module):
    """Hugging Face Llama's decoder layer: x + o(attention(rope(qkv(RMSNorm(x))))), then
    x + down(silu(gate) * up) of RMSNorm(x); no biases; grouped-query attention."""

    def __init__(self, width, heads, kv_heads, hidden, attention):
        super().__init__()
        d = width // heads
        self.norm1, self.norm2 = RMSNorm(width), RMSNorm(width)
        self.qkv = torch.nn.Linear(width, (heads + 2 * kv_heads) * d, bias=False)
        self.o = torch.nn.Linear(width, width, bias=False)
        self.gate_up = torch.nn.Linear(width, 2 * hidden, bias=False)
        self.down = torch.nn.Linear(hidden, width, bias=False)
        self.attention = attention(heads, True, kv_heads, True)

    def forward(self, x):
        x = x + self.o(self.attention(self.qkv(self.norm1(x)), None)[0])
        gate, up = self.gate_up(self.norm2(x)).chunk(2, dim=-1)
        return x + self.down(F.silu(gate) * up)


class Llama(torch.nn.Module):
    """gpt --arch=llama (examples/models.cc): kv heads heads / 2 when even, MLP hidden 8/3 width
    rounded up to 64; forward(ids, next_ids) returns (loss, None)."""

    def __init__(self, vocab, context, width, layers, heads, attention):
        super().__init__()
        kv_heads = heads // 2 if heads % 2 == 0 else heads
        hidden = ((8 * width + 2) // 3 + 63) // 64 * 64
        self.tokens = torch.nn.Embedding(vocab, width)
        self.blocks = torch.nn.Sequential(*[LlamaBlock(width, heads, kv_heads, hidden, attention) for _ in range(layers)])
        self.norm, self.head = RMSNorm(width), torch.nn.Linear(width, vocab, bias=False)

    def forward(self, ids, next_ids):
        logits = self.head(self.norm(self.blocks(self.tokens(ids))))
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), next_ids.view(-1)), None


class MixtralExpert(torch.nn.Module):
    """Hugging Face Mixtral's MixtralBlockSparseTop2MLP: w2(silu(w1 x) * w3 x), no biases."""

    def __init__(self, width, hidden):
        super().__init__()
        self.w1 = torch.nn.Linear(width, hidden, bias=False)
        self.w3 = torch.nn.Linear(width, hidden, bias=False)
        self.w2 = torch.nn.Linear(hidden, width, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class MixtralMoeBlock(torch.nn.Module):
    """Hugging Face Mixtral's MixtralSparseMoeBlock: the router's softmax over the experts in float32,
    top-k, renormalized to sum 1; then a loop over the experts that received tokens, each gathering
    its tokens, running its MLP, scaling by the routing weight and index_add-ing the rows back."""

    def __init__(self, width, hidden, experts, top_k):
        super().__init__()
        self.gate = torch.nn.Linear(width, experts, bias=False)
        self.experts = torch.nn.ModuleList([MixtralExpert(width, hidden) for _ in range(experts)])
        self.top_k = top_k

    def forward(self, x, _):
        probs = F.softmax(self.gate(x), dim=1, dtype=torch.float)
        weights, chosen = torch.topk(probs, self.top_k, dim=-1)
        weights = (weights / weights.sum(dim=-1, keepdim=True)).to(x.dtype)
        out = torch.zeros_like(x)
        mask = F.one_hot(chosen, num_classes=len(self.experts)).permute(2, 1, 0)  # [experts, k, tokens]
        for e in torch.greater(mask.sum(dim=(-1, -2)), 0).nonzero():
            slot, token = torch.where(mask[e[0]])
            y = self.experts[e[0]](x[token]) * weights[token, slot, None]
            out.index_add_(0, token, y.to(x.dtype))
        return out, None


def time_ms(fn, device):
    start = time.perf_counter()
    fn()
    if device == "cuda":
        torch.cuda.synchronize()  # kernels run asynchronously
    return (time.perf_counter() - start) * 1e3


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="mlp_block", choices=["mlp_block", "norm_block", "mnist_mlp", "attention", "gpt", "llama", "moe_block"])
    parser.add_argument("--tokens", type=int, default=4096)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--batch", type=int, default=4, help="attention: sequences per batch")
    parser.add_argument("--heads", type=int, default=4, help="attention: heads (--hidden a multiple)")
    parser.add_argument("--kv-heads", type=int, default=0, help="attention: key and value heads (0: --heads)")
    parser.add_argument("--rope", type=int, default=0, choices=[0, 1], help="attention: 1 to rotate q and k first")
    parser.add_argument("--causal", type=int, default=1, choices=[0, 1], help="attention: 1 for causal")
    parser.add_argument("--gpt-context", type=int, default=64, help="gpt: tokens per window (--tokens windows)")
    parser.add_argument("--layers", type=int, default=3, help="gpt: transformer blocks")
    parser.add_argument("--gpt-heads", type=int, default=4, help="gpt: attention heads")
    parser.add_argument("--experts", type=int, default=8, help="moe_block: experts")
    parser.add_argument("--top-k", type=int, default=2, help="moe_block: experts per token")
    parser.add_argument("--expert-hidden", type=int, default=512, help="moe_block: each expert's hidden width")
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    parser.add_argument("--json")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    torch.manual_seed(0)
    if args.device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False  # float32 GEMMs, as FuseLab's default
    dtype = getattr(torch, args.dtype)
    sizes = {}
    if args.model == "attention":
        if args.hidden % args.heads:
            parser.error(f"--hidden {args.hidden} is not a multiple of --heads {args.heads}")
        kv_heads = args.kv_heads or args.heads
        if args.heads % kv_heads:
            parser.error(f"--kv-heads {kv_heads} does not divide --heads {args.heads}")
        sizes = {"batch": args.batch, "causal": args.causal, "heads": args.heads, "kv-heads": kv_heads, "rope": args.rope}
        eager = MathAttention(args.heads, bool(args.causal), kv_heads, bool(args.rope))
        width = (args.heads + 2 * kv_heads) * (args.hidden // args.heads)
        x = torch.randn(args.batch, args.tokens, width, device=args.device, dtype=dtype, requires_grad=True)
        residual = None
    elif args.model in ("gpt", "llama"):
        sizes = {"gpt-context": args.gpt_context, "gpt-heads": args.gpt_heads, "layers": args.layers}
        model_class = Gpt if args.model == "gpt" else Llama

        def gpt(attention):
            torch.manual_seed(0)
            return model_class(112, args.gpt_context, args.hidden, args.layers, args.gpt_heads, attention).to(
                args.device, dtype)

        eager = gpt(MathAttention)
        x = torch.randint(0, 112, (args.tokens, args.gpt_context), device=args.device)
        residual = torch.randint(0, 112, (args.tokens, args.gpt_context), device=args.device)  # the next ids
    elif args.model == "moe_block":
        sizes = {"experts": args.experts, "top-k": args.top_k, "expert-hidden": args.expert_hidden}
        eager = MixtralMoeBlock(args.hidden, args.expert_hidden, args.experts, args.top_k).to(args.device, dtype)
        x = torch.randn(args.tokens, args.hidden, device=args.device, dtype=dtype, requires_grad=True)
        residual = None
    elif args.model == "mnist_mlp":
        eager = MnistMlp(args.hidden).to(args.device, dtype)
        x = torch.randn(args.tokens, 784, device=args.device, dtype=dtype)  # features require no grad
        residual = torch.randint(0, 10, (args.tokens,), device=args.device)  # the labels
    else:
        eager = (MlpBlock if args.model == "mlp_block" else NormBlock)(args.hidden).to(args.device, dtype)
        x = torch.randn(args.tokens, args.hidden, device=args.device, dtype=dtype, requires_grad=True)
        residual = x if args.model == "mlp_block" else torch.randn(
            args.tokens, args.hidden, device=args.device, dtype=dtype, requires_grad=True)

    def measure(model, params):
        """Medians of forward, forward + backward and, for mnist_mlp, the training step (else None)."""
        with_step = args.model == "mnist_mlp"
        optimizer = torch.optim.SGD(params, lr=0.01) if with_step else None  # attention has no parameters

        def forward():
            with torch.no_grad():
                model(x, residual)

        def forward_backward():
            out, _ = model(x, residual)
            out.sum().backward()
            for t in (x, residual):
                if t is not None and t.is_floating_point():
                    t.grad = None
            model.zero_grad(set_to_none=True)

        def step():
            optimizer.zero_grad(set_to_none=True)
            model(x, residual)[0].backward()
            optimizer.step()

        for _ in range(3):  # both, so torch.compile builds its no_grad graph before the timing too
            forward()
            forward_backward()
            if with_step:
                step()
        fwd, fwd_bwd, steps = [], [], []
        for _ in range(args.iters):
            fwd.append(time_ms(forward, args.device))
            fwd_bwd.append(time_ms(forward_backward, args.device))
            if with_step:
                steps.append(time_ms(step, args.device))
        return statistics.median(fwd), statistics.median(fwd_bwd), statistics.median(steps) if steps else None

    unfused_fwd, unfused_fwd_bwd, unfused_step = measure(eager, eager.parameters())
    sdpa_fwd = sdpa_fwd_bwd = None
    if args.model in ("attention", "gpt", "llama") and hasattr(F, "scaled_dot_product_attention"):
        sdpa = gpt(SdpaAttention) if args.model in ("gpt", "llama") else SdpaAttention(args.heads, bool(args.causal), kv_heads, bool(args.rope))
        sdpa_fwd, sdpa_fwd_bwd, _ = measure(sdpa, sdpa.parameters())
    fused_fwd = fused_fwd_bwd = fused_step = None
    compile_error = None if hasattr(torch, "compile") else f"torch {torch.__version__} has no torch.compile"
    if hasattr(torch, "compile"):
        try:
            fused_fwd, fused_fwd_bwd, fused_step = measure(torch.compile(eager), eager.parameters())
        except Exception as e:  # e.g. no C++ compiler for inductor's CPU code
            compile_error = f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"
    result = {
        "model": args.model, "device": args.device, "dtype": args.dtype, "tokens": args.tokens, "hidden": args.hidden,
        "sizes": sizes,  # the bench's blocks have no size flags of their own
        "fused_fwd_ms": fused_fwd, "unfused_fwd_ms": unfused_fwd,
        "fused_fwd_bwd_ms": fused_fwd_bwd, "unfused_fwd_bwd_ms": unfused_fwd_bwd,
        "speedup_fwd_bwd": unfused_fwd_bwd / fused_fwd_bwd if fused_fwd_bwd else None,
        "fused_peak_bytes": None, "unfused_peak_bytes": None,
        "peer": f"pytorch {torch.__version__}", "threads": torch.get_num_threads(),
    }
    if args.model == "mnist_mlp":
        result.update({"fused_step_ms": fused_step, "unfused_step_ms": unfused_step})
    if args.model in ("attention", "gpt", "llama"):
        result.update({
            "sdpa_fwd_ms": sdpa_fwd, "sdpa_fwd_bwd_ms": sdpa_fwd_bwd,
            "sdpa_speedup_fwd_bwd": unfused_fwd_bwd / sdpa_fwd_bwd if sdpa_fwd_bwd else None,
            "compile_error": compile_error,
        })
    elif compile_error:
        result["compile_error"] = compile_error
    print(json.dumps(result))
    if args.json:
        with open(args.json, "w") as f:
            json.dump([result], f, indent=1)


if __name__ == "__main__":
    main()
