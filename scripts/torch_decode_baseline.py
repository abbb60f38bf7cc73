#!/usr/bin/env python3
"""Decode tokens/s of a Llama-architecture Hugging Face checkpoint in PyTorch eager, the baseline that
scripts/gpu-check.sh sets beside graphlane's own decode rate on the same GPU.

Reads config.json and *.safetensors of MODEL_DIR with torch + safetensors only (no transformers), runs
the Llama forward (RMSNorm, rotary embeddings in Hugging Face's rotate-half layout, grouped-query
attention, SwiGLU MLP) with a key/value cache, and measures greedy decode the way graphlane's
DecodeThroughput does: R concurrent requests (here one batch of R rows) with the 4-token prompts
[1+i, 2+i, 3+i, 4+i], N new tokens each; decode is timed from the moment every request has its first
token to the last token. Prints one line per request count:

  GPUCHECK torch-decode-tokens-per-second requests=R torch=T (...)          (--mode eager, the default)
  GPUCHECK torch-graph-decode-tokens-per-second requests=R torch=T (...)    (--mode graph: the decode step captured once in
                                                                            a torch.cuda.CUDAGraph and replayed)
  GPUCHECK torch-compile-decode-tokens-per-second requests=R torch=T (...)  (--mode compile: torch.compile(mode=
                                                                            "reduce-overhead"); SKIPPED with the reason if
                                                                            it cannot compile on this host)

The key/value cache is static (allocated once for the prompt plus the new tokens). With --prefill N it also prints
"GPUCHECK torch-prefill-tokens-per-second tokens=N torch=T": one N-token prompt, eager, best of 3 after a warm-up.

or, when torch or a GPU is missing, "GPUCHECK torch-decode-tokens-per-second SKIPPED: why" (exit 0).

usage: torch_decode_baseline.py MODEL_DIR [--requests 1,8] [--new-tokens 32] [--device cuda:0] [--dtype float32]
                                [--mode eager|graph|compile] [--prefill N]
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
    p.add_argument("--mode", default="eager", choices=["eager", "graph", "compile"])
    p.add_argument("--prefill", type=int, default=0, help="also measure prefill tokens/s of one prompt of N tokens")
    args = p.parse_args(argv)
    try:
        args.requests = [int(r) for r in args.requests.split(",") if r.strip()]
    except ValueError:
        p.error("--requests: expected comma-separated integers, got %r" % args.requests)
    if not args.requests or min(args.requests) < 1:
        p.error("--requests: every count must be >= 1, got %r" % args.requests)
    if args.new_tokens < 2:
        p.error("--new-tokens: expected >= 2, got %d" % args.new_tokens)
    if args.prefill < 0:
        p.error("--prefill: expected >= 0, got %d" % args.prefill)
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


    def decode_static(self, token, pos, cache):
        """Logits of token ids [batch, 1] at the position held in the one-element device tensor pos: no host value sets a
        shape or an index, so the step can be captured in a CUDA graph. Attends over the whole static cache, masking the
        positions after pos."""
        t = self.t
        batch = token.shape[0]
        x = self.embed[token]
        group = self.heads // self.kv_heads
        length = cache[0][0].shape[2]
        mask = t.where(t.arange(length, device=token.device) <= pos, 0.0, float("-inf")).to(x.dtype)
        for layer, b in enumerate(self.blocks):
            h = self.rms_norm(x, b["ln1"])
            q = self.linear(h, b["q"], b["qb"]).view(batch, 1, self.heads, self.head_dim).transpose(1, 2)
            k = self.linear(h, b["k"], b["kb"]).view(batch, 1, self.kv_heads, self.head_dim).transpose(1, 2)
            v = self.linear(h, b["v"], b["vb"]).view(batch, 1, self.kv_heads, self.head_dim).transpose(1, 2)
            q = self.rope(q, pos)
            k = self.rope(k, pos)
            keys, values = cache[layer]
            keys.index_copy_(2, pos, k)
            values.index_copy_(2, pos, v)
            k_all = keys.repeat_interleave(group, dim=1)
            v_all = values.repeat_interleave(group, dim=1)
            scores = (q @ k_all.transpose(-1, -2)) / math.sqrt(self.head_dim) + mask
            attn = t.softmax(scores.float(), dim=-1).to(q.dtype) @ v_all
            attn = attn.transpose(1, 2).reshape(batch, 1, self.heads * self.head_dim)
            x = x + self.linear(attn, b["o"], b["ob"])
            h = self.rms_norm(x, b["ln2"])
            x = x + (t.nn.functional.silu(h @ b["gate"].t()) * (h @ b["up"].t())) @ b["down"].t()
        x = self.rms_norm(x, self.norm)
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


def measure_static(torch, model, requests, new_tokens, device, dtype, mode):
    """As measure, with the decode step over a static cache captured in a CUDA graph (mode graph) or compiled by
    torch.compile(mode="reduce-overhead") (mode compile); the prompts are prefilled eagerly."""
    prompts = torch.tensor([[1 + i, 2 + i, 3 + i, 4 + i] for i in range(requests)], device=device)
    cache = model.new_cache(requests, prompts.shape[1] + new_tokens, device, dtype)
    with torch.no_grad():
        logits = model.forward(prompts, 0, cache)
        token = logits.argmax(-1, keepdim=True)
        static_token = token.clone()
        static_pos = torch.tensor([prompts.shape[1]], device=device, dtype=torch.long)
        if mode == "graph":
            side = torch.cuda.Stream(device)
            side.wait_stream(torch.cuda.current_stream(device))
            with torch.cuda.stream(side):
                for _ in range(2):  # warm-up off the capture (the position it writes is written again by the first step)
                    model.decode_static(static_token, static_pos, cache)
            torch.cuda.current_stream(device).wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                static_logits = model.decode_static(static_token, static_pos, cache)

            def step():
                graph.replay()
                return static_logits
        else:
            compiled = torch.compile(model.decode_static, mode="reduce-overhead", fullgraph=True)
            for _ in range(3):  # compiles, records and warms the graphs; the position it writes is written again
                compiled(static_token, static_pos, cache)

            def step():
                return compiled(static_token, static_pos, cache)
        token.cpu()  # every request has its first token here
        start = time.perf_counter()
        position = prompts.shape[1]
        for _ in range(new_tokens - 1):
            static_token.copy_(token)
            static_pos.fill_(position)
            token = step().argmax(-1, keepdim=True)
            token.cpu()
            position += 1
        seconds = time.perf_counter() - start
    return requests * (new_tokens - 1), seconds


def measure_prefill(torch, model, tokens, device, dtype):
    """Prefill tokens/s of one prompt of `tokens` ids, eager: best of 3 after a warm-up."""
    vocabulary = model.embed.shape[0]
    ids = torch.tensor([[1 + (i * 7919) % max(1, vocabulary - 1) for i in range(tokens)]], device=device)
    best = 0.0
    with torch.inference_mode():
        for round_ in range(4):
            cache = model.new_cache(1, tokens, device, dtype)
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            start = time.perf_counter()
            model.forward(ids, 0, cache).argmax(-1).cpu()
            seconds = time.perf_counter() - start
            if round_ > 0:
                best = max(best, tokens / seconds)
    return best


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
    model_name = os.path.basename(os.path.normpath(args.model_dir))
    metric = {"eager": "torch-decode-tokens-per-second", "graph": "torch-graph-decode-tokens-per-second",
              "compile": "torch-compile-decode-tokens-per-second"}[args.mode]
    if args.mode != "eager" and device.type != "cuda":
        print("GPUCHECK %s SKIPPED: --mode %s needs a CUDA device, got %s" % (metric, args.mode, args.device))
        return 0
    for requests in args.requests:
        try:
            if args.mode == "eager":
                tokens, seconds = measure(torch, model, requests, args.new_tokens, device, dtype)
            else:
                tokens, seconds = measure_static(torch, model, requests, args.new_tokens, device, dtype, args.mode)
        except Exception as e:  # torch.compile without a working compiler toolchain, a capture the host refuses
            if args.mode == "eager":
                raise
            print("GPUCHECK %s SKIPPED: %s could not run on this host: %s" % (metric, args.mode, str(e).splitlines()[0] if str(e) else repr(e)))
            sys.stdout.flush()
            break
        print("GPUCHECK %s requests=%d torch=%.1f (%s, torch %s %s %s on %s; %d tokens in %.3f s after prefill)"
              % (metric, requests, tokens / seconds, model_name, torch.__version__, args.mode, args.dtype, name, tokens, seconds))
        sys.stdout.flush()
    if args.prefill > 0:
        rate = measure_prefill(torch, model, args.prefill, device, dtype)
        print("GPUCHECK torch-prefill-tokens-per-second tokens=%d torch=%.1f (%s, torch %s eager %s on %s, best of 3)"
              % (args.prefill, rate, model_name, torch.__version__, args.dtype, name))
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
