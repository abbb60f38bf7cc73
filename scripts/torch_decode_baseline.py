#!/usr/bin/env python3
"""Decode tokens/s of a Llama-architecture Hugging Face checkpoint in PyTorch eager, the baseline that
scripts/gpu-check.sh sets beside graphlane's own decode rate on the same GPU.

Reads config.json and *.safetensors of MODEL_DIR with torch + safetensors only (no transformers), runs
the Llama forward (RMSNorm, rotary embeddings in Hugging Face's rotate-half layout, grouped-query
attention, SwiGLU MLP) with a key/value cache, and measures greedy decode the way graphlane's
DecodeThroughput does: R concurrent requests (here one batch of R rows) with the 4-token prompts
[1+i, 2+i, 3+i, 4+i], N new tokens each; decode is timed from the moment every request has its first
token to the last token. Prints one line per request count:

  GPUCHECK torch-decode-tokens-per-second requests=R torch=T (...)

or, when torch or a GPU is missing, "GPUCHECK torch-decode-tokens-per-second SKIPPED: why" (exit 0).

usage: torch_decode_baseline.py MODEL_DIR [--requests 1,8] [--new-tokens 32] [--device cuda:0] [--dtype float32]
"""
import argparse
import glob
import json
import math
import os
import sys
import time


def parse_args(argv):
    p = argparse.ArgumentParser(description="PyTorch eager decode baseline for a Llama checkpoint")
    p.add_argument("model_dir")
    p.add_argument("--requests", default="1,8", help="comma-separated concurrent request counts (default 1,8)")
    p.add_argument("--new-tokens", type=int, default=32)
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--dtype", default="float32", choices=["float32", "float16", "bfloat16"])
    args = p.parse_args(argv)
    try:
        args.requests = [int(r) for r in args.requests.split(",") if r.strip()]
    except ValueError:
        p.error("--requests: expected comma-separated integers, got %r" % args.requests)
    if not args.requests or min(args.requests) < 1:
        p.error("--requests: every count must be >= 1, got %r" % args.requests)
    if args.new_tokens < 2:
        p.error("--new-tokens: expected >= 2, got %d" % args.new_tokens)
    return args


class Llama:
    """The Llama decoder on one device, weights as plain tensors, with a per-layer key/value cache."""

    def __init__(self, torch, config, weights, device, dtype):
        self.t = torch
        c = config
        self.hidden = c["hidden_size"]
        self.layers = c["num_hidden_layers"]
        self.heads = c["num_attention_heads"]
        self.kv_heads = c.get("num_key_value_heads", self.heads)
        self.head_dim = c.get("head_dim") or self.hidden // self.heads
        self.eps = float(c.get("rms_norm_eps", 1e-6))
        self.theta = float(c.get("rope_theta", 10000.0))
        self.max_positions = int(c.get("max_position_embeddings", 2048))

        def w(name, required=True):
            if name not in weights:
                if required:
                    raise SystemExit("GPUCHECK torch-decode-tokens-per-second FAILED: tensor %s is missing from the checkpoint" % name)
                return None
            return weights[name].to(device=device, dtype=dtype)

        self.embed = w("model.embed_tokens.weight")
        self.norm = w("model.norm.weight")
        tied = c.get("tie_word_embeddings", False)
        self.lm_head = self.embed if tied else w("lm_head.weight")
        self.blocks = []
        for i in range(self.layers):
            pre = "model.layers.%d." % i
            self.blocks.append({
                "ln1": w(pre + "input_layernorm.weight"), "ln2": w(pre + "post_attention_layernorm.weight"),
                "q": w(pre + "self_attn.q_proj.weight"), "k": w(pre + "self_attn.k_proj.weight"),
                "v": w(pre + "self_attn.v_proj.weight"), "o": w(pre + "self_attn.o_proj.weight"),
                "qb": w(pre + "self_attn.q_proj.bias", False), "kb": w(pre + "self_attn.k_proj.bias", False),
                "vb": w(pre + "self_attn.v_proj.bias", False), "ob": w(pre + "self_attn.o_proj.bias", False),
                "gate": w(pre + "mlp.gate_proj.weight"), "up": w(pre + "mlp.up_proj.weight"), "down": w(pre + "mlp.down_proj.weight"),
            })
        inv_freq = 1.0 / (self.theta ** (torch.arange(0, self.head_dim, 2, device=device, dtype=torch.float32) / self.head_dim))
        positions = torch.arange(self.max_positions, device=device, dtype=torch.float32)
        freqs = torch.outer(positions, inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.cos = emb.cos().to(dtype)
        self.sin = emb.sin().to(dtype)

    def rms_norm(self, x, weight):
        t = self.t
        var = x.float().pow(2).mean(-1, keepdim=True)
        return (x.float() * t.rsqrt(var + self.eps)).to(x.dtype) * weight

    @staticmethod
    def linear(x, weight, bias):
        y = x @ weight.t()
        return y if bias is None else y + bias

    def rope(self, x, positions):
        # x: [batch, heads, seq, head_dim]; rotate-half layout, as Hugging Face's Llama stores q and k.
        cos = self.cos[positions]  # [seq, head_dim], broadcast over batch and heads
        sin = self.sin[positions]
        half = x.shape[-1] // 2
        rotated = self.t.cat((-x[..., half:], x[..., :half]), dim=-1)
        return x * cos + rotated * sin

    def new_cache(self, batch, length, device, dtype):
        t = self.t
        return [(t.zeros(batch, self.kv_heads, length, self.head_dim, device=device, dtype=dtype),
                 t.zeros(batch, self.kv_heads, length, self.head_dim, device=device, dtype=dtype)) for _ in range(self.layers)]

    def forward(self, ids, start, cache):
        """Logits of the last position for token ids [batch, seq] at positions start.. start+seq-1."""
        t = self.t
        batch, seq = ids.shape
        positions = t.arange(start, start + seq, device=ids.device)
        x = self.embed[ids]
        group = self.heads // self.kv_heads
        for layer, b in enumerate(self.blocks):
            h = self.rms_norm(x, b["ln1"])
            q = self.linear(h, b["q"], b["qb"]).view(batch, seq, self.heads, self.head_dim).transpose(1, 2)
            k = self.linear(h, b["k"], b["kb"]).view(batch, seq, self.kv_heads, self.head_dim).transpose(1, 2)
            v = self.linear(h, b["v"], b["vb"]).view(batch, seq, self.kv_heads, self.head_dim).transpose(1, 2)
            q = self.rope(q, positions)
            k = self.rope(k, positions)
            keys, values = cache[layer]
            keys[:, :, start:start + seq] = k
            values[:, :, start:start + seq] = v
            k_all = keys[:, :, :start + seq].repeat_interleave(group, dim=1)
            v_all = values[:, :, :start + seq].repeat_interleave(group, dim=1)
            scores = (q @ k_all.transpose(-1, -2)) / math.sqrt(self.head_dim)
            if seq > 1:
                mask = t.full((seq, start + seq), float("-inf"), device=ids.device).triu(start + 1)
                scores = scores + mask.to(scores.dtype)
            attn = t.softmax(scores.float(), dim=-1).to(q.dtype) @ v_all
            attn = attn.transpose(1, 2).reshape(batch, seq, self.heads * self.head_dim)
            x = x + self.linear(attn, b["o"], b["ob"])
            h = self.rms_norm(x, b["ln2"])
            x = x + (t.nn.functional.silu(h @ b["gate"].t()) * (h @ b["up"].t())) @ b["down"].t()
        x = self.rms_norm(x[:, -1:, :], self.norm)
        return (x @ self.lm_head.t())[:, -1, :]


def load_weights(safetensors_torch, model_dir):
    files = sorted(glob.glob(os.path.join(model_dir, "*.safetensors")))
    if not files:
        raise SystemExit("GPUCHECK torch-decode-tokens-per-second FAILED: no *.safetensors in %s" % model_dir)
    weights = {}
    for f in files:
        weights.update(safetensors_torch.load_file(f, device="cpu"))
    return weights


def measure(torch, model, requests, new_tokens, device, dtype):
    """(decode tokens, decode seconds) of `requests` greedy requests of `new_tokens` tokens, prefilled together."""
    prompts = torch.tensor([[1 + i, 2 + i, 3 + i, 4 + i] for i in range(requests)], device=device)
    cache = model.new_cache(requests, prompts.shape[1] + new_tokens, device, dtype)
    with torch.inference_mode():
        logits = model.forward(prompts, 0, cache)
        token = logits.argmax(-1, keepdim=True)
        token.cpu()  # every request has its first token here
        start = time.perf_counter()
        position = prompts.shape[1]
        for _ in range(new_tokens - 1):
            logits = model.forward(token, position, cache)
            token = logits.argmax(-1, keepdim=True)
            token.cpu()  # a serving loop reads each token on the host, as graphlane does
            position += 1
        seconds = time.perf_counter() - start
    return requests * (new_tokens - 1), seconds


def main(argv):
    args = parse_args(argv)
    try:
        import torch
        import safetensors.torch as safetensors_torch
    except ImportError as e:
        print("GPUCHECK torch-decode-tokens-per-second SKIPPED: %s (python3 needs torch and safetensors)" % e)
        return 0
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("GPUCHECK torch-decode-tokens-per-second SKIPPED: torch %s sees no CUDA device" % torch.__version__)
        return 0
    config_path = os.path.join(args.model_dir, "config.json")
    try:
        with open(config_path) as f:
            config = json.load(f)
    except (OSError, ValueError) as e:
        print("GPUCHECK torch-decode-tokens-per-second FAILED: cannot read %s: %s" % (config_path, e))
        return 1
    dtype = getattr(torch, args.dtype)
    device = torch.device(args.device)
    model = Llama(torch, config, load_weights(safetensors_torch, args.model_dir), device, dtype)
    measure(torch, model, 1, 4, device, dtype)  # warm-up: kernels, allocator
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    for requests in args.requests:
        tokens, seconds = measure(torch, model, requests, args.new_tokens, device, dtype)
        print("GPUCHECK torch-decode-tokens-per-second requests=%d torch=%.1f (%s, torch %s eager %s on %s; %d tokens in %.3f s after prefill)"
              % (requests, tokens / seconds, os.path.basename(os.path.normpath(args.model_dir)), torch.__version__, args.dtype, name,
                 tokens, seconds))
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
