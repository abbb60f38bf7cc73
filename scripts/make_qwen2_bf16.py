#!/usr/bin/env python3
"""Writes a BF16 Qwen2 checkpoint of real width with random weights, for measuring load time and memory.

The shapes are Qwen2-0.5B's (Qwen2ForCausalLM: hidden 896, intermediate 4864, 24 layers, 14 heads, 2 KV heads,
vocab 151936, tied embeddings, q/k/v biases); the weights are random normal (std 0.02, norms 1), so the model's
text means nothing. The safetensors file is written directly (8-byte little-endian header length, a JSON header
padded with spaces to a multiple of 8 bytes, then the data); bf16 is the upper 16 bits of the float32 (truncated).
One tensor is in memory at a time. Needs numpy only.

usage: scripts/make_qwen2_bf16.py OUT_DIR [--tokenizer tokenizer.json] [--seed N] [--layers N]
"""
import argparse
import json
import os
import shutil
import struct

import numpy as np

CONFIG = {
    "architectures": ["Qwen2ForCausalLM"],
    "model_type": "qwen2",
    "hidden_act": "silu",
    "hidden_size": 896,
    "intermediate_size": 4864,
    "num_hidden_layers": 24,
    "num_attention_heads": 14,
    "num_key_value_heads": 2,
    "vocab_size": 151936,
    "max_position_embeddings": 32768,
    "rms_norm_eps": 1e-06,
    "rope_theta": 1000000.0,
    "sliding_window": 32768,
    "use_sliding_window": False,
    "max_window_layers": 24,
    "tie_word_embeddings": True,
    "torch_dtype": "bfloat16",
    "bos_token_id": None,
    "eos_token_id": None,
}


def tensors(c):
    """(name, shape, kind) of every tensor, kind being 'matrix', 'bias' or 'norm'."""
    h, i = c["hidden_size"], c["intermediate_size"]
    head_dim = h // c["num_attention_heads"]
    kv = c["num_key_value_heads"] * head_dim
    out = [("model.embed_tokens.weight", (c["vocab_size"], h), "matrix")]
    for l in range(c["num_hidden_layers"]):
        p = f"model.layers.{l}."
        out += [
            (p + "input_layernorm.weight", (h,), "norm"),
            (p + "self_attn.q_proj.weight", (h, h), "matrix"),
            (p + "self_attn.q_proj.bias", (h,), "bias"),
            (p + "self_attn.k_proj.weight", (kv, h), "matrix"),
            (p + "self_attn.k_proj.bias", (kv,), "bias"),
            (p + "self_attn.v_proj.weight", (kv, h), "matrix"),
            (p + "self_attn.v_proj.bias", (kv,), "bias"),
            (p + "self_attn.o_proj.weight", (h, h), "matrix"),
            (p + "post_attention_layernorm.weight", (h,), "norm"),
            (p + "mlp.gate_proj.weight", (i, h), "matrix"),
            (p + "mlp.up_proj.weight", (i, h), "matrix"),
            (p + "mlp.down_proj.weight", (h, i), "matrix"),
        ]
    out.append(("model.norm.weight", (h,), "norm"))
    return out


def bf16(values):
    """The upper 16 bits of each float32, as little-endian bytes."""
    return (np.ascontiguousarray(values, dtype=np.float32).view(np.uint32) >> 16).astype("<u2").tobytes()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--tokenizer", help="a tokenizer.json to copy next to the weights")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--layers", type=int, default=CONFIG["num_hidden_layers"])
    args = ap.parse_args()
    config = dict(CONFIG, num_hidden_layers=args.layers)
    os.makedirs(args.out, exist_ok=True)

    specs = tensors(config)
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, shape, _ in specs:
        size = 2 * int(np.prod(shape))
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-(8 + len(text)) % 8)

    rng = np.random.default_rng(args.seed)
    path = os.path.join(args.out, "model.safetensors")
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for name, shape, kind in specs:
            if kind == "norm":
                values = np.ones(shape, dtype=np.float32)
            else:
                values = rng.standard_normal(shape, dtype=np.float32) * np.float32(0.02)
            f.write(bf16(values))
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    if args.tokenizer:
        shutil.copyfile(args.tokenizer, os.path.join(args.out, "tokenizer.json"))
    print(f"{path}: {len(specs)} tensors, {offset} data bytes, {os.path.getsize(path)} file bytes")


if __name__ == "__main__":
    main()
