#!/usr/bin/env python3
"""Independent float64 reference for Hugging Face decoder-only checkpoints, and the
generator of the fixtures under inference/src/test/resources/hf-fixtures/.

Needs only Python 3.11 and numpy: safetensors are read and written here (8-byte
little-endian header length, JSON header, data), config.json is interpreted the way
transformers interprets it, and the forward pass is plain float64 numpy.

Which transformers code the math follows (read from the released sources of
transformers 4.57.6 and 5.18.0):
- RoPE: src/transformers/modeling_rope_utils.py -- _compute_default/linear/dynamic_ntk/
  yarn/longrope/llama3_parameters, and the `dynamic_rope_update` decorator that
  recomputes `inv_freq` inside each forward for "dynamic" and "longrope".
- config layouts: 4.x `rope_theta` + `rope_scaling` (`type` or `rope_type`; Phi-3 keeps
  `original_max_position_embeddings` at top level), and 5.x `rope_parameters`
  (RotaryEmbeddingConfigMixin.standardize_rope_params: flat dict, or nested per layer
  type, e.g. {"full_attention": {...}, "sliding_attention": {...}}).
- models: models/llama/modeling_llama.py (LlamaForCausalLM: attention_bias, mlp_bias,
  head_dim, tie_word_embeddings), qwen2 (q/k/v biases, o without; sliding_window only
  when use_sliding_window), qwen3 (q_norm/k_norm RMSNorm over head_dim before RoPE),
  mistral (sliding window on every layer), phi3 (fused qkv_proj [q|k|v], fused
  gate_up_proj [gate|up], partial_rotary_factor: RoPE on the first
  int(head_dim*factor) dims, rotate_half inside them), gemma2 (embeddings x
  sqrt(hidden), RMSNorm x(1+w), GeGLU, four norms per layer -- its
  `post_attention_layernorm` normalises the attention OUTPUT, unlike Llama's --
  query_pre_attn_scalar, attention and final logit soft-capping, sliding window on
  even layers), gemma3 text (gemma2 plus q_norm/k_norm, no soft-capping by default,
  local RoPE base `rope_local_base_freq` for sliding layers and `rope_theta` +
  `rope_scaling` for full-attention layers, `sliding_window_pattern`/`layer_types`),
  mixtral (Mistral attention; MixtralSparseMoeBlock `block_sparse_moe`: router
  `gate` [E, H], softmax over all E experts in float, torch.topk of
  `num_experts_per_tok`, the chosen weights always renormalised to sum 1; expert j is
  w2(act(w1 x) * w3 x)), qwen3_moe (Qwen3 attention with q_norm/k_norm;
  Qwen3MoeSparseMoeBlock `mlp`: the same softmax then top-k, renormalised only when
  `norm_topk_prob`; experts gate/up/down_proj of width `moe_intermediate_size`; layer i
  is sparse when i is not in `mlp_only_layers` and (i + 1) % `decoder_sparse_step` == 0,
  otherwise a dense MLP of width `intermediate_size`). Ties in the top-k go to the lower
  expert index (np.argsort stable on -p); random weights give no ties.
- masks: masking_utils.sliding_window_overlay: a query at position i sees the keys j
  with j <= i and i - j < sliding_window (kv_idx > q_idx - sliding_window).
- activations: activations.py: "silu", "gelu" (exact erf), "gelu_pytorch_tanh".

Generation is greedy with a KV cache as `generate` does it: one forward over the
prompt, then one forward per new token. Each prompt starts from a freshly loaded model
(fresh rotary state). The rotary embedding is evaluated once per forward with
seq_len = max(position_ids) + 1, and keys enter the cache already rotated, so:
- dynamic: inv_freq grows to seq_len whenever seq_len > the largest length seen so
  far (initially max_position_embeddings); keys already in the cache keep the
  frequencies of the forward that made them (no re-rotation);
- longrope: a forward with seq_len > original_max_position_embeddings uses
  long_factor, otherwise short_factor; the attention factor (sqrt(1 + ln(max_pos/orig)
  / ln(orig)) unless given) scales cos and sin in every forward, short or long. For
  Phi3ForCausalLM, prepare_inputs_for_generation drops the cache at the step where the
  sequence first reaches original_max_position_embeddings + 1 tokens while the cache
  holds <= original_max_position_embeddings, so that forward recomputes every key with
  the long factors (a prompt that crosses the length during decoding sees one full
  recompute, then cached decoding again);
- yarn: fixed frequencies, cos and sin scaled by attention_factor (default
  0.1*ln(factor)+1, or the mscale/mscale_all_dim ratio).

Usage:
  hf_reference.py --out DIR [--only CASE]     write fixtures (deterministic)
  hf_reference.py --check DIR [--only CASE]   regenerate and compare with what is stored
  hf_reference.py --self-check [--tiny DIR]   reproduce ../shared/fixtures/tiny-llama
"""

import argparse
import copy
import json
import math
import os
import shutil
import struct
import sys

import numpy as np

FOLLOWS = ("HF transformers 4.57.6 / 5.18.0: modeling_rope_utils.py (+dynamic_rope_update), "
           "masking_utils.py, models/{llama,qwen2,qwen3,mistral,phi3,gemma2,gemma3}/modeling_*.py; "
           "greedy generate with a KV cache, float64")
FOLLOWS_MOE = ("HF transformers 4.57.6 / 5.18.0: modeling_rope_utils.py, masking_utils.py, "
               "models/{mixtral,qwen3_moe}/modeling_*.py (softmax router, torch.topk, renormalisation); "
               "greedy generate with a KV cache, float64")
TOLERANCE_REL = 1e-4
GREEDY_STEPS = 8
PROMPT_LENGTHS = (3, 12, 24, 60)
MIN_REL_MARGIN = 0.015   # prompts are picked so every greedy margin is >= 1.5% of max |logit|
SCRIPT_DIR = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(SCRIPT_DIR)
DEFAULT_OUT = os.path.join(REPO, "inference", "src", "test", "resources", "hf-fixtures")
DEFAULT_TINY = os.path.join(REPO, "..", "shared", "fixtures", "tiny-llama")

# ----------------------------------------------------------------------------- safetensors

_DTYPES = {"F32": ("<f4", 4), "F64": ("<f8", 8), "F16": ("<f2", 2), "BF16": (None, 2)}


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n].decode("utf-8"))
    base = 8 + n
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        dt, size = _DTYPES[meta["dtype"]]
        b, e = meta["data_offsets"]
        raw = data[base + b:base + e]
        if meta["dtype"] == "BF16":
            arr = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            arr = np.frombuffer(raw, dt)
        out[name] = arr.reshape(meta["shape"]).astype(np.float64)
    return out


def write_safetensors(path, tensors):
    """tensors: name -> float32 array. Names sorted, data contiguous, header padded to 8."""
    header, blobs, off = {}, [], 0
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name], dtype="<f4")
        blob = a.tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + len(blob)]}
        blobs.append(blob)
        off += len(blob)
    hb = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hb += b" " * ((8 - len(hb) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hb)))
        f.write(hb)
        for blob in blobs:
            f.write(blob)

# ----------------------------------------------------------------------------- config

def _family(cfg):
    mt = cfg.get("model_type")
    if mt in ("llama", "mistral", "qwen2", "qwen3", "phi3", "gemma2", "gemma3_text", "mixtral", "qwen3_moe"):
        return mt
    raise ValueError(f"config.json: model_type {mt!r} is not one this reference knows")


def layer_types(cfg):
    fam, n = _family(cfg), cfg["num_hidden_layers"]
    if fam in ("gemma2", "gemma3_text"):
        if cfg.get("layer_types"):
            return list(cfg["layer_types"])
        pattern = 2 if fam == "gemma2" else cfg.get("sliding_window_pattern", 6)
        return ["sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(n)]
    if fam in ("qwen2", "qwen3", "qwen3_moe"):
        if not cfg.get("use_sliding_window", False) or cfg.get("sliding_window") is None:
            return ["full_attention"] * n
        if cfg.get("layer_types"):
            return list(cfg["layer_types"])
        mwl = cfg.get("max_window_layers", n)
        return ["sliding_attention" if i >= mwl else "full_attention" for i in range(n)]
    if fam in ("mistral", "phi3", "mixtral"):
        return ["sliding_attention" if cfg.get("sliding_window") is not None else "full_attention"] * n
    return ["full_attention"] * n


def rope_parameters(cfg):
    """Per layer type, the standardized rope dict (rope_type, rope_theta, ...), as
    transformers 5.x standardize_rope_params makes it from either config layout."""
    fam = _family(cfg)
    types = set(layer_types(cfg))
    if fam == "gemma3_text" and "rope_parameters" not in cfg:
        # 4.x Gemma3: global layers use rope_theta (+rope_scaling); sliding layers use a default
        # RoPE with base rope_local_base_freq (Gemma3TextModel.rotary_emb_local).
        full = dict(cfg.get("rope_scaling") or {"rope_type": "default"})
        full.setdefault("rope_type", full.get("type", "default"))
        full["rope_theta"] = cfg.get("rope_theta", 1_000_000.0)
        local = {"rope_type": "default", "rope_theta": cfg.get("rope_local_base_freq", 10_000.0)}
        return {"full_attention": full, "sliding_attention": local}
    rp = copy.deepcopy(cfg.get("rope_scaling") or cfg.get("rope_parameters") or {})
    theta = cfg.get("rope_theta", 10_000.0)
    prf = cfg.get("partial_rotary_factor")
    if rp and set(rp.keys()) <= {"full_attention", "sliding_attention"}:
        out = {}
        for t, d in rp.items():
            d = dict(d or {"rope_type": "default"})
            d.setdefault("rope_type", d.get("type", "default"))
            if fam == "gemma3_text":   # Gemma3TextConfig.default_theta
                d.setdefault("rope_theta", 1_000_000.0 if t == "full_attention" else 10_000.0)
            d.setdefault("rope_theta", theta)
            if prf is not None:
                d.setdefault("partial_rotary_factor", prf)
            if d["rope_type"] in ("llama3", "yarn", "longrope"):
                d.setdefault("original_max_position_embeddings", cfg["max_position_embeddings"])
            out[t] = d
        return out
    rp.setdefault("rope_type", rp.get("type", "default"))
    rp.setdefault("rope_theta", theta)
    if prf is not None:
        rp.setdefault("partial_rotary_factor", prf)
    if rp["rope_type"] in ("llama3", "yarn", "longrope"):
        if "original_max_position_embeddings" in cfg:   # Phi-3: top level wins
            rp["original_max_position_embeddings"] = cfg["original_max_position_embeddings"]
        else:
            rp.setdefault("original_max_position_embeddings", cfg["max_position_embeddings"])
    return {t: rp for t in types}


def n_experts(cfg):
    return cfg["num_local_experts"] if _family(cfg) == "mixtral" else cfg["num_experts"]


def is_sparse_layer(cfg, i):
    """Mixtral: every layer. Qwen3MoeDecoderLayer: not in mlp_only_layers, num_experts > 0 and
    (i + 1) % decoder_sparse_step == 0."""
    fam = _family(cfg)
    if fam == "mixtral":
        return True
    if fam == "qwen3_moe":
        return (i not in cfg.get("mlp_only_layers", []) and cfg["num_experts"] > 0
                and (i + 1) % cfg.get("decoder_sparse_step", 1) == 0)
    return False


def moe_names(cfg, i):
    """(prefix of the sparse block, (gate, up, down) names inside each expert)."""
    if _family(cfg) == "mixtral":
        return f"model.layers.{i}.block_sparse_moe.", ("w1", "w3", "w2")
    return f"model.layers.{i}.mlp.", ("gate_proj", "up_proj", "down_proj")


def head_dim(cfg):
    return cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]

# ----------------------------------------------------------------------------- RoPE


def compute_inv_freq(rp, hd, max_pos, seq_len=None):
    """(inv_freq, attention_factor) as modeling_rope_utils computes them, in float64."""
    rt = rp["rope_type"]
    base = float(rp["rope_theta"])
    dim = int(hd * rp.get("partial_rotary_factor", 1.0))
    expo = np.arange(0, dim, 2, dtype=np.float64) / dim
    inv = 1.0 / base ** expo
    if rt == "default":
        return inv, 1.0
    if rt == "linear":
        return inv / rp["factor"], 1.0
    if rt == "dynamic":
        factor = rp["factor"]
        s = max_pos if seq_len is None else max(seq_len, max_pos)
        b = base * ((factor * s / max_pos) - (factor - 1)) ** (dim / (dim - 2))
        return 1.0 / b ** expo, 1.0
    if rt == "llama3":
        factor, lo, hi = rp["factor"], rp["low_freq_factor"], rp["high_freq_factor"]
        old = rp["original_max_position_embeddings"]
        lo_wl, hi_wl = old / lo, old / hi
        wl = 2 * math.pi / inv
        out = np.where(wl > lo_wl, inv / factor, inv)
        smooth = (old / wl - lo) / (hi - lo)
        smoothed = (1 - smooth) * out / factor + smooth * out
        medium = ~(wl < hi_wl) & ~(wl > lo_wl)
        return np.where(medium, smoothed, out), 1.0
    if rt == "yarn":
        orig = rp["original_max_position_embeddings"]
        factor = rp.get("factor") or max_pos / orig
        af = rp.get("attention_factor")
        ms, msa = rp.get("mscale"), rp.get("mscale_all_dim")

        def get_mscale(scale, m=1.0):
            return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0
        if af is None:
            af = get_mscale(factor, ms) / get_mscale(factor, msa) if (ms and msa) else get_mscale(factor)
        bf, bs = rp.get("beta_fast") or 32, rp.get("beta_slow") or 1

        def corr_dim(rot):
            return dim * math.log(orig / (rot * 2 * math.pi)) / (2 * math.log(base))
        low, high = corr_dim(bf), corr_dim(bs)
        if rp.get("truncate", True):
            low, high = math.floor(low), math.ceil(high)
        low, high = max(low, 0), min(high, dim - 1)
        if low == high:
            high += 0.001
        ramp = np.clip((np.arange(dim // 2, dtype=np.float64) - low) / (high - low), 0, 1)
        extra = 1 - ramp
        pos = base ** expo
        inv = (1.0 / (factor * pos)) * (1 - extra) + (1.0 / pos) * extra
        return inv, float(af)
    if rt == "longrope":
        orig = rp["original_max_position_embeddings"]
        factor = rp.get("factor") or max_pos / orig
        af = rp.get("attention_factor")
        if af is None:
            af = 1.0 if factor <= 1.0 else math.sqrt(1 + math.log(factor) / math.log(orig))
        for key in ("long_factor", "short_factor"):
            if len(rp[key]) != dim // 2:
                raise ValueError(f"config.json: rope {key} has {len(rp[key])} entries, expected "
                                 f"{dim // 2} (rotary dims {dim} / 2)")
        ext = np.asarray(rp["long_factor"] if (seq_len and seq_len > orig) else rp["short_factor"],
                         dtype=np.float64)
        return 1.0 / (ext * base ** expo), float(af)
    raise ValueError(f"rope_type {rt!r} is not one this reference knows")


class RotaryState:
    """One rotary embedding module with its dynamic_rope_update state."""

    def __init__(self, rp, hd, max_pos):
        self.rp, self.hd, self.max_pos = rp, hd, max_pos
        self.inv, self.scale = compute_inv_freq(rp, hd, max_pos)
        self.orig_inv = self.inv
        self.cached = max_pos
        self.orig_len = max_pos

    def cos_sin(self, positions):
        seq_len = int(max(positions)) + 1
        rt = self.rp["rope_type"]
        if rt == "dynamic":
            if seq_len > self.cached:
                self.inv, self.scale = compute_inv_freq(self.rp, self.hd, self.max_pos, seq_len)
                self.cached = seq_len
            if seq_len < self.orig_len and self.cached > self.orig_len:
                self.inv, self.cached = self.orig_inv, self.orig_len
        elif rt == "longrope":
            if seq_len > self.rp["original_max_position_embeddings"]:
                self.inv, _ = compute_inv_freq(self.rp, self.hd, self.max_pos,
                                               self.rp["original_max_position_embeddings"] + 1)
            else:
                self.inv = self.orig_inv
        freqs = np.outer(np.asarray(positions, dtype=np.float64), self.inv)
        emb = np.concatenate([freqs, freqs], axis=-1)
        return np.cos(emb) * self.scale, np.sin(emb) * self.scale


def apply_rope(x, cos, sin):
    """x: [heads, T, hd]; RoPE on the first cos.shape[-1] dims (rotate_half), rest passes."""
    rd = cos.shape[-1]
    xr, xp = x[..., :rd], x[..., rd:]
    h = rd // 2
    rot = np.concatenate([-xr[..., h:], xr[..., :h]], axis=-1)
    return np.concatenate([xr * cos + rot * sin, xp], axis=-1)

# ----------------------------------------------------------------------------- model

_erf = np.vectorize(math.erf)


def activation(name):
    if name == "silu":
        return lambda x: x / (1.0 + np.exp(-x))
    if name == "gelu":
        return lambda x: 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))
    if name in ("gelu_pytorch_tanh", "gelu_new"):
        return lambda x: 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    raise ValueError(f"hidden_act {name!r} is not one this reference knows")


class Model:
    def __init__(self, cfg, w):
        self.cfg, self.w = cfg, w
        self.fam = _family(cfg)
        self.gemma = self.fam in ("gemma2", "gemma3_text")
        self.H = cfg["hidden_size"]
        self.nh, self.nkv = cfg["num_attention_heads"], cfg.get("num_key_value_heads") or cfg["num_attention_heads"]
        self.hd = head_dim(cfg)
        self.eps = cfg.get("rms_norm_eps", 1e-6)
        self.types = layer_types(cfg)
        self.window = cfg.get("sliding_window")
        self.rope = rope_parameters(cfg)
        self.act = activation(cfg.get("hidden_activation") if self.gemma else cfg.get("hidden_act", "silu"))
        if self.gemma:
            self.scaling = cfg["query_pre_attn_scalar"] ** -0.5
        else:
            self.scaling = self.hd ** -0.5
        self.attn_cap = cfg.get("attn_logit_softcapping") if self.gemma else None
        self.final_cap = cfg.get("final_logit_softcapping") if self.gemma else None
        # Phi3ForCausalLM.prepare_inputs_for_generation drops the cache at the step where the
        # sequence first grows past original_max_position_embeddings, so generate recomputes
        # every key with the long factors (rope_scaling set, 4.57; the top-level field, 5.x)
        self.phi3_switch_reset = (self.fam == "phi3" and bool(cfg.get("rope_scaling") or cfg.get("rope_parameters"))
                                  and "original_max_position_embeddings" in cfg)
        self.moe = self.fam in ("mixtral", "qwen3_moe")
        self.lm_head = w.get("lm_head.weight")
        if self.lm_head is None:
            if not cfg.get("tie_word_embeddings", False):
                raise ValueError("model.safetensors: lm_head.weight missing and tie_word_embeddings is false")
            self.lm_head = w["model.embed_tokens.weight"]
        self.reset()

    def reset(self):
        self.k_cache = [None] * self.cfg["num_hidden_layers"]
        self.v_cache = [None] * self.cfg["num_hidden_layers"]
        self.rot = {t: RotaryState(rp, self.hd, self.cfg["max_position_embeddings"]) for t, rp in self.rope.items()}
        self.pos = 0

    def norm(self, x, wname):
        x = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.eps)
        wt = self.w[wname]
        return x * (1.0 + wt) if self.gemma else x * wt

    def linear(self, x, name):
        y = x @ self.w[name + ".weight"].T
        b = self.w.get(name + ".bias")
        return y if b is None else y + b

    def attention(self, i, x, positions, cos_sin):
        p = f"model.layers.{i}.self_attn."
        T, hd = x.shape[0], self.hd
        if self.fam == "phi3":
            qkv = self.linear(x, p + "qkv_proj")
            nq, nk = self.nh * hd, self.nkv * hd
            q, k, v = qkv[:, :nq], qkv[:, nq:nq + nk], qkv[:, nq + nk:]
        else:
            q, k, v = self.linear(x, p + "q_proj"), self.linear(x, p + "k_proj"), self.linear(x, p + "v_proj")
        q = q.reshape(T, self.nh, hd).transpose(1, 0, 2)
        k = k.reshape(T, self.nkv, hd).transpose(1, 0, 2)
        v = v.reshape(T, self.nkv, hd).transpose(1, 0, 2)
        if self.fam in ("qwen3", "gemma3_text", "qwen3_moe"):
            q, k = self.norm(q, p + "q_norm.weight"), self.norm(k, p + "k_norm.weight")
        cos, sin = cos_sin
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        if self.k_cache[i] is not None:
            k = np.concatenate([self.k_cache[i], k], axis=1)
            v = np.concatenate([self.v_cache[i], v], axis=1)
        self.k_cache[i], self.v_cache[i] = k, v
        rep = self.nh // self.nkv
        k, v = np.repeat(k, rep, axis=0), np.repeat(v, rep, axis=0)
        s = np.einsum("htd,hsd->hts", q, k) * self.scaling
        if self.attn_cap:
            s = np.tanh(s / self.attn_cap) * self.attn_cap
        qi = np.asarray(positions)[:, None]
        kj = np.arange(k.shape[1])[None, :]
        visible = kj <= qi
        if self.types[i] == "sliding_attention":
            visible &= (qi - kj) < self.window
        s = np.where(visible[None], s, -np.inf)
        s = s - s.max(axis=-1, keepdims=True)
        pr = np.exp(s)
        pr /= pr.sum(axis=-1, keepdims=True)
        o = np.einsum("hts,hsd->htd", pr, v).transpose(1, 0, 2).reshape(T, self.nh * hd)
        return self.linear(o, p + "o_proj")

    def mlp(self, i, x):
        if is_sparse_layer(self.cfg, i):
            return self.sparse_moe(i, x)
        p = f"model.layers.{i}.mlp."
        if self.fam == "phi3":
            gu = self.linear(x, p + "gate_up_proj")
            g, u = np.split(gu, 2, axis=-1)
        else:
            g, u = self.linear(x, p + "gate_proj"), self.linear(x, p + "up_proj")
        return self.linear(self.act(g) * u, p + "down_proj")

    def sparse_moe(self, i, x):
        """MixtralSparseMoeBlock / Qwen3MoeSparseMoeBlock: softmax over every expert's router logit, the top
        num_experts_per_tok probabilities (torch.topk; ties to the lower index), renormalised to sum 1 for Mixtral
        and for Qwen3-MoE with norm_topk_prob, then the routing-weighted sum of the chosen experts' SwiGLU MLPs."""
        p, names = moe_names(self.cfg, i)
        logits = x @ self.w[p + "gate.weight"].T                      # [T, E]
        z = logits - logits.max(axis=-1, keepdims=True)
        probs = np.exp(z)
        probs /= probs.sum(axis=-1, keepdims=True)
        k = self.cfg["num_experts_per_tok"]
        top = np.argsort(-probs, axis=-1, kind="stable")[:, :k]     # [T, k]
        weights = np.take_along_axis(probs, top, axis=-1)
        renormalise = self.fam == "mixtral" or self.cfg.get("norm_topk_prob", False)
        if renormalise and not self.cfg.get("_ablate_no_renormalisation"):   # the key only --ablate sets
            weights = weights / weights.sum(axis=-1, keepdims=True)
        out = np.zeros_like(x)
        gate_n, up_n, down_n = names
        for e in range(n_experts(self.cfg)):
            rows, slot = np.nonzero(top == e)
            if len(rows) == 0:
                continue
            xe = x[rows]
            ep = f"{p}experts.{e}."
            h = self.act(xe @ self.w[ep + gate_n + ".weight"].T) * (xe @ self.w[ep + up_n + ".weight"].T)
            out[rows] += (h @ self.w[ep + down_n + ".weight"].T) * weights[rows, slot][:, None]
        return out

    def forward(self, ids):
        """Feed new tokens (continuing the cache); return logits of every new position."""
        positions = list(range(self.pos, self.pos + len(ids)))
        self.pos += len(ids)
        h = self.w["model.embed_tokens.weight"][np.asarray(ids)]
        if self.gemma:
            h = h * np.float64(np.float32(self.H ** 0.5))
        cs = {t: r.cos_sin(positions) for t, r in self.rot.items()}
        for i in range(self.cfg["num_hidden_layers"]):
            p = f"model.layers.{i}."
            a = self.attention(i, self.norm(h, p + "input_layernorm.weight"), positions, cs[self.types[i]])
            if self.gemma:
                h = h + self.norm(a, p + "post_attention_layernorm.weight")
                m = self.mlp(i, self.norm(h, p + "pre_feedforward_layernorm.weight"))
                h = h + self.norm(m, p + "post_feedforward_layernorm.weight")
            else:
                h = h + a
                h = h + self.mlp(i, self.norm(h, p + "post_attention_layernorm.weight"))
        logits = self.norm(h, "model.norm.weight") @ self.lm_head.T
        if self.final_cap:
            logits = np.tanh(logits / self.final_cap) * self.final_cap
        return logits


def greedy(model, ids, steps):
    """HF generate(do_sample=False) with a KV cache, from a fresh model state."""
    model.reset()
    seq = list(ids)
    logits = model.forward(seq)[-1]
    last = logits.copy()
    toks, margins, tops, rel = [], [], [], []
    for s in range(steps):
        order = np.argsort(-logits, kind="stable")
        t = int(order[0])
        toks.append(t)
        seq.append(t)
        margins.append(float(logits[order[0]] - logits[order[1]]))
        tops.append(float(logits[order[0]]))
        rel.append(margins[-1] / float(np.max(np.abs(logits))))
        if s + 1 < steps:
            orig = model.cfg.get("original_max_position_embeddings")
            if model.phi3_switch_reset and len(seq) >= orig + 1 and model.pos <= orig:
                model.reset()
                logits = model.forward(seq)[-1]
            else:
                logits = model.forward([t])[-1]
    return last, toks, margins, tops, rel


# ----------------------------------------------------------------------------- cases

V, HID, NH, NKV = 256, 64, 4, 2


def _llama_cfg(**kw):
    c = {
        "architectures": ["LlamaForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
        "bos_token_id": None, "eos_token_id": None, "head_dim": HID // NH, "hidden_act": "silu",
        "hidden_size": HID, "initializer_range": 0.02, "intermediate_size": 128,
        "max_position_embeddings": 256, "mlp_bias": False, "model_type": "llama",
        "num_attention_heads": NH, "num_hidden_layers": 2, "num_key_value_heads": NKV,
        "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": None, "rope_theta": 10000.0,
        "tie_word_embeddings": False, "torch_dtype": "float32", "transformers_version": "4.57.6",
        "use_cache": True, "vocab_size": V,
    }
    c.update(kw)
    return c


def _v5(c):
    """The same model as transformers 5.x writes it: rope_parameters, dtype."""
    c = dict(c)
    rp = dict(c.pop("rope_scaling") or {"rope_type": "default"})
    if "type" in rp:
        rp["rope_type"] = rp.pop("type")
    rp["rope_theta"] = c.pop("rope_theta")
    c["rope_parameters"] = rp
    c["dtype"] = c.pop("torch_dtype")
    c["transformers_version"] = "5.18.0"
    return dict(sorted(c.items()))


LLAMA3_SCALING = {"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                  "original_max_position_embeddings": 32, "rope_type": "llama3"}


def _qwen2_cfg():
    return {
        "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": None,
        "eos_token_id": None, "hidden_act": "silu", "hidden_size": HID, "initializer_range": 0.02,
        "intermediate_size": 128, "layer_types": ["full_attention", "full_attention"],
        "max_position_embeddings": 256, "max_window_layers": 1, "model_type": "qwen2",
        "num_attention_heads": NH, "num_hidden_layers": 2, "num_key_value_heads": NKV,
        "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 1000000.0,
        "sliding_window": 16, "tie_word_embeddings": False, "torch_dtype": "float32",
        "transformers_version": "4.57.6", "use_cache": True, "use_sliding_window": False,
        "vocab_size": V,
    }


def _qwen3_cfg():
    return {
        "architectures": ["Qwen3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
        "bos_token_id": None, "eos_token_id": None, "head_dim": 32, "hidden_act": "silu",
        "hidden_size": HID, "initializer_range": 0.02, "intermediate_size": 128,
        "layer_types": ["full_attention", "full_attention"], "max_position_embeddings": 256,
        "max_window_layers": 2, "model_type": "qwen3", "num_attention_heads": NH,
        "num_hidden_layers": 2, "num_key_value_heads": NKV, "rms_norm_eps": 1e-06,
        "rope_scaling": None, "rope_theta": 1000000.0, "sliding_window": None,
        "tie_word_embeddings": False, "torch_dtype": "float32", "transformers_version": "4.57.6",
        "use_cache": True, "use_sliding_window": False, "vocab_size": V,
    }


def _mistral_cfg():
    return {
        "architectures": ["MistralForCausalLM"], "attention_dropout": 0.0, "bos_token_id": None,
        "eos_token_id": None, "head_dim": HID // NH, "hidden_act": "silu", "hidden_size": HID,
        "initializer_range": 0.02, "intermediate_size": 128, "max_position_embeddings": 256,
        "model_type": "mistral", "num_attention_heads": NH, "num_hidden_layers": 2,
        "num_key_value_heads": NKV, "rms_norm_eps": 1e-05, "rope_theta": 10000.0,
        "sliding_window": 16, "tie_word_embeddings": False, "torch_dtype": "float32",
        "transformers_version": "4.57.6", "use_cache": True, "vocab_size": V,
    }


def _factors(rng_seed, n, lo, hi):
    r = np.random.default_rng(rng_seed)
    return [round(float(x), 4) for x in np.sort(r.uniform(lo, hi, n))]


def _phi3_cfg(partial, tie, sliding, seed):
    hd = HID // NH
    n = int(hd * partial) // 2
    return {
        "architectures": ["Phi3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
        "bos_token_id": None, "embd_pdrop": 0.0, "eos_token_id": None, "hidden_act": "silu",
        "hidden_size": HID, "initializer_range": 0.02, "intermediate_size": 128,
        "max_position_embeddings": 64, "model_type": "phi3", "num_attention_heads": NH,
        "num_hidden_layers": 2, "num_key_value_heads": NKV, "original_max_position_embeddings": 16,
        "pad_token_id": None, "partial_rotary_factor": partial, "resid_pdrop": 0.0,
        "rms_norm_eps": 1e-05,
        "rope_scaling": {"long_factor": _factors(seed, n, 1.0, 6.0),
                         "short_factor": _factors(seed + 1, n, 0.9, 1.6), "type": "longrope"},
        "rope_theta": 10000.0, "sliding_window": sliding, "tie_word_embeddings": tie,
        "torch_dtype": "float32", "transformers_version": "4.57.6", "use_cache": True, "vocab_size": V,
    }


def _gemma2_cfg():
    return {
        "architectures": ["Gemma2ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
        "attn_logit_softcapping": 5.0, "bos_token_id": None, "cache_implementation": "hybrid",
        "eos_token_id": None, "final_logit_softcapping": 15.0, "head_dim": 16,
        "hidden_act": "gelu_pytorch_tanh", "hidden_activation": "gelu_pytorch_tanh",
        "hidden_size": HID, "initializer_range": 0.02, "intermediate_size": 64,
        "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention"],
        "max_position_embeddings": 256, "model_type": "gemma2", "num_attention_heads": NH,
        "num_hidden_layers": 4, "num_key_value_heads": NKV, "pad_token_id": None,
        "query_pre_attn_scalar": 24, "rms_norm_eps": 1e-06, "rope_theta": 10000.0,
        "sliding_window": 16, "tie_word_embeddings": True, "torch_dtype": "float32",
        "transformers_version": "4.57.6", "use_cache": True, "vocab_size": V,
    }


def _gemma3_cfg():
    return {
        "_sliding_window_pattern": 2, "architectures": ["Gemma3ForCausalLM"], "attention_bias": False,
        "attention_dropout": 0.0, "attn_logit_softcapping": None, "bos_token_id": None,
        "eos_token_id": None, "final_logit_softcapping": None, "head_dim": 16,
        "hidden_activation": "gelu_pytorch_tanh", "hidden_size": HID, "initializer_range": 0.02,
        "intermediate_size": 64,
        "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention"],
        "max_position_embeddings": 256, "model_type": "gemma3_text", "num_attention_heads": NH,
        "num_hidden_layers": 4, "num_key_value_heads": NKV, "pad_token_id": None,
        "query_pre_attn_scalar": 16, "rms_norm_eps": 1e-06, "rope_local_base_freq": 10000.0,
        "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "rope_theta": 1000000.0,
        "sliding_window": 16, "sliding_window_pattern": 2, "tie_word_embeddings": True,
        "torch_dtype": "float32", "transformers_version": "4.57.6", "use_bidirectional_attention": False,
        "use_cache": True, "vocab_size": V,
    }


def _mixtral_cfg():
    return {
        "architectures": ["MixtralForCausalLM"], "attention_dropout": 0.0, "bos_token_id": None,
        "eos_token_id": None, "head_dim": HID // NH, "hidden_act": "silu", "hidden_size": HID,
        "initializer_range": 0.02, "intermediate_size": 32, "max_position_embeddings": 256,
        "model_type": "mixtral", "num_attention_heads": NH, "num_experts_per_tok": 2,
        "num_hidden_layers": 2, "num_key_value_heads": NKV, "num_local_experts": 8,
        "output_router_logits": False, "rms_norm_eps": 1e-05, "rope_theta": 1000000.0,
        "router_aux_loss_coef": 0.02, "router_jitter_noise": 0.0, "sliding_window": None,
        "tie_word_embeddings": False, "torch_dtype": "float32", "transformers_version": "4.57.6",
        "use_cache": True, "vocab_size": V,
    }


def _qwen3_moe_cfg():
    return {
        "architectures": ["Qwen3MoeForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
        "bos_token_id": None, "decoder_sparse_step": 1, "eos_token_id": None, "head_dim": 32,
        "hidden_act": "silu", "hidden_size": HID, "initializer_range": 0.02, "intermediate_size": 96,
        "max_position_embeddings": 256, "max_window_layers": 3, "mlp_only_layers": [1],
        "model_type": "qwen3_moe", "moe_intermediate_size": 24, "norm_topk_prob": False,
        "num_attention_heads": NH, "num_experts": 8, "num_experts_per_tok": 3, "num_hidden_layers": 3,
        "num_key_value_heads": NKV, "output_router_logits": False, "rms_norm_eps": 1e-06,
        "rope_scaling": None, "rope_theta": 1000000.0, "router_aux_loss_coef": 0.001,
        "sliding_window": None, "tie_word_embeddings": False, "torch_dtype": "float32",
        "transformers_version": "4.57.6", "use_cache": True, "use_sliding_window": False, "vocab_size": V,
    }


CASES = {}   # name -> (seed, config, group)
GAINS = {}   # name -> {weight kind: std multiplier}


def _case(name, seed, cfg, group, **gains):
    CASES[name] = (seed, cfg, group)
    GAINS[name] = gains


_case("llama3-rope-tied", 101, _llama_cfg(rope_scaling=dict(LLAMA3_SCALING), rope_theta=10000.0,
                                          tie_word_embeddings=True), 1)
_case("llama3-rope-params-v5", 101, _v5(_llama_cfg(rope_scaling=dict(LLAMA3_SCALING), rope_theta=10000.0,
                                                   tie_word_embeddings=True)), 1)
_case("default-rope-params-v5", 103, _v5(_llama_cfg(rope_theta=500000.0)), 1)
_case("linear-rope", 104, _llama_cfg(rope_scaling={"factor": 4.0, "rope_type": "linear"}), 1)
_case("dynamic-rope", 105, _llama_cfg(max_position_embeddings=16,
                                      rope_scaling={"factor": 2.0, "rope_type": "dynamic"}), 1,
      discriminate=(12, 24, 60))
_case("yarn-rope", 106, _llama_cfg(max_position_embeddings=64, rope_theta=1000.0,
                                   rope_scaling={"factor": 4.0, "original_max_position_embeddings": 16,
                                                 "rope_type": "yarn"}), 1)
_case("mlp-bias", 107, _llama_cfg(mlp_bias=True), 1)
# a stronger MLP puts the erf and tanh GELUs further apart (still only ~3x the tolerance:
# the two functions differ by < 5e-4 anywhere)
_case("gelu-act", 108, _llama_cfg(hidden_act="gelu"), 1, up_proj=3.0, down_proj=2.0)
_case("gelu-tanh-act", 109, _llama_cfg(hidden_act="gelu_pytorch_tanh"), 1, up_proj=3.0, down_proj=2.0)
_case("attention-bias", 110, _llama_cfg(attention_bias=True), 1)
_case("qwen2", 111, _qwen2_cfg(), 1)
_case("qwen3", 112, _qwen3_cfg(), 1)
_case("mistral-sliding-window", 113, _mistral_cfg(), 1)
_case("phi3-longrope", 201, _phi3_cfg(1.0, False, None, 2010), 2, discriminate=(12,))
_case("phi4-mini", 202, _phi3_cfg(0.75, True, 262144, 2020), 2, discriminate=(12,))
_case("qwen3-params-v5", 112, _v5(_qwen3_cfg()), 2)
# Gemma scales embeddings by sqrt(hidden): small tied embeddings, a stronger final norm and
# post-norms keep the residual from being the input token's own embedding (which would make
# greedy decoding repeat the last prompt token whatever the layers compute)
GEMMA_WEIGHTS = {"embed_tokens": (0.0, 0.1), "model.norm.": (3.0, 0.1), "post_": (1.0, 0.1)}
_case("gemma2", 301, _gemma2_cfg(), 3, override=GEMMA_WEIGHTS)
_case("gemma3-text", 302, _gemma3_cfg(), 3, override=GEMMA_WEIGHTS)


def _gemma3_v5():
    """gemma3-text as transformers 5.x writes it: rope_parameters per layer type."""
    c = _gemma3_cfg()
    for k in ("rope_theta", "rope_scaling", "rope_local_base_freq", "_sliding_window_pattern",
              "sliding_window_pattern"):
        c.pop(k)
    c["rope_parameters"] = {"full_attention": {"factor": 8.0, "rope_theta": 1000000.0, "rope_type": "linear"},
                            "sliding_attention": {"rope_theta": 10000.0, "rope_type": "default"}}
    c["dtype"] = c.pop("torch_dtype")
    c["transformers_version"] = "5.18.0"
    return dict(sorted(c.items()))


_case("gemma3-text-params-v5", 302, _gemma3_v5(), 3, override=GEMMA_WEIGHTS)
# mixture of experts: experts' outputs are weighted by router probabilities (< 1), so their
# projections are stronger to keep the sparse block's share of the residual comparable
_case("mixtral", 401, _mixtral_cfg(), 4, w1=1.5, w3=1.5, w2=2.0)
_case("qwen3-moe", 402, _qwen3_moe_cfg(), 4, up_proj=1.5, down_proj=2.0)


def tensor_shapes(cfg):
    fam = _family(cfg)
    H, hd, nh, nkv, I = cfg["hidden_size"], head_dim(cfg), cfg["num_attention_heads"], \
        cfg["num_key_value_heads"], cfg["intermediate_size"]
    gemma = fam in ("gemma2", "gemma3_text")
    s = {"model.embed_tokens.weight": ([cfg["vocab_size"], H], "embed"),
         "model.norm.weight": ([H], "norm")}
    if not cfg.get("tie_word_embeddings", False):
        s["lm_head.weight"] = ([cfg["vocab_size"], H], "lm_head")
    attn_bias = cfg.get("attention_bias", False)
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        s[p + "input_layernorm.weight"] = ([H], "norm")
        s[p + "post_attention_layernorm.weight"] = ([H], "norm")
        if gemma:
            s[p + "pre_feedforward_layernorm.weight"] = ([H], "norm")
            s[p + "post_feedforward_layernorm.weight"] = ([H], "norm")
        a = p + "self_attn."
        if fam == "phi3":
            s[a + "qkv_proj.weight"] = ([(nh + 2 * nkv) * hd, H], "qk")
        else:
            s[a + "q_proj.weight"] = ([nh * hd, H], "qk")
            s[a + "k_proj.weight"] = ([nkv * hd, H], "qk")
            s[a + "v_proj.weight"] = ([nkv * hd, H], "proj")
            if attn_bias or fam == "qwen2":
                s[a + "q_proj.bias"] = ([nh * hd], "bias")
                s[a + "k_proj.bias"] = ([nkv * hd], "bias")
                s[a + "v_proj.bias"] = ([nkv * hd], "bias")
        s[a + "o_proj.weight"] = ([H, nh * hd], "proj")
        if attn_bias:
            s[a + "o_proj.bias"] = ([H], "bias")
        if fam in ("qwen3", "gemma3_text", "qwen3_moe"):
            s[a + "q_norm.weight"] = ([hd], "norm")
            s[a + "k_norm.weight"] = ([hd], "norm")
        if is_sparse_layer(cfg, i):
            mp, (gn, un, dn) = moe_names(cfg, i)
            EI = cfg["intermediate_size"] if fam == "mixtral" else cfg["moe_intermediate_size"]
            s[mp + "gate.weight"] = ([n_experts(cfg), H], "router")
            for e in range(n_experts(cfg)):
                ep = f"{mp}experts.{e}."
                s[ep + gn + ".weight"] = ([EI, H], "proj")
                s[ep + un + ".weight"] = ([EI, H], "proj")
                s[ep + dn + ".weight"] = ([H, EI], "proj")
            continue
        m = p + "mlp."
        if fam == "phi3":
            s[m + "gate_up_proj.weight"] = ([2 * I, H], "proj")
        else:
            s[m + "gate_proj.weight"] = ([I, H], "proj")
            s[m + "up_proj.weight"] = ([I, H], "proj")
        s[m + "down_proj.weight"] = ([H, I], "proj")
        if cfg.get("mlp_bias", False):
            for n_, d in (("gate_proj", I), ("up_proj", I), ("down_proj", H)):
                s[m + n_ + ".bias"] = ([d], "bias")
    return s


def make_weights(cfg, seed, gains=None):
    """Random F32 weights, scaled so activations and logits are O(1..10)."""
    gains = gains or {}
    rng = np.random.default_rng(seed)
    gemma = _family(cfg) in ("gemma2", "gemma3_text")
    out = {}
    for name, (shape, kind) in sorted(tensor_shapes(cfg).items()):
        special = [ms for sub, ms in gains.get("override", {}).items() if sub in name]
        if special:
            a = rng.normal(special[0][0], special[0][1], shape)
        elif kind == "norm":
            a = rng.normal(0.0, 0.1, shape) + (0.0 if gemma else 1.0)
        elif kind == "bias":
            a = rng.normal(0.0, 0.3, shape)
        elif kind == "embed":
            a = rng.normal(0.0, 0.5 if cfg.get("tie_word_embeddings") else 1.0, shape)
        elif kind == "lm_head":
            a = rng.normal(0.0, 0.5, shape)
        elif kind == "qk":
            a = rng.normal(0.0, 1.6 / math.sqrt(shape[1]), shape)
        elif kind == "router":
            a = rng.normal(0.0, float(gains.get("router", 1.5)) / math.sqrt(shape[1]), shape)
        else:
            g = float(gains.get(name.split(".")[-2], 1.0))
            a = rng.normal(0.0, g / math.sqrt(shape[1]), shape)
        out[name] = a.astype(np.float32)
    return out


def alternative(model, ids):
    """The plausible mistake a discriminating prompt must expose: for Phi-3, keeping the
    cache across the short->long switch; otherwise re-rotating every key each step."""
    if model.phi3_switch_reset:
        model.phi3_switch_reset = False
        try:
            return greedy(model, ids, GREEDY_STEPS)
        finally:
            model.phi3_switch_reset = True
    return greedy_recompute(model, ids, GREEDY_STEPS)


def pick_prompts(model, seed, discriminate=()):
    """Per length, the first deterministic random prompt whose greedy margins are all
    >= MIN_REL_MARGIN of the step's max |logit|. For lengths in `discriminate`, prefer
    (within 200 tries) one whose greedy tokens change under `alternative`, so the fixture
    tells the two cache semantics apart."""
    prompts = []
    for L in PROMPT_LENGTHS:
        chosen = None
        for attempt in range(400):
            ids = [int(x) for x in np.random.default_rng([seed, L, attempt]).integers(0, 256, L)]
            last, toks, margins, tops, rel = greedy(model, ids, GREEDY_STEPS)
            if min(rel) < MIN_REL_MARGIN:
                continue
            if chosen is None:
                chosen = ids
            if L not in discriminate or attempt >= 200:
                break
            if alternative(model, ids)[1] != toks:
                chosen = ids
                break
        if chosen is None:
            raise RuntimeError(f"no prompt of length {L} with greedy margins >= {MIN_REL_MARGIN} found")
        prompts.append(chosen)
    return prompts


def reference_for(model, name, prompts):
    ref = {"case": name, "follows": FOLLOWS_MOE if model.moe else FOLLOWS, "tolerance_rel": TOLERANCE_REL, "prompts": []}
    for ids in prompts:
        last, toks, margins, tops, rel = greedy(model, ids, GREEDY_STEPS)
        ref["prompts"].append({"ids": ids, "last_logits": [float(x) for x in last], "greedy_8": toks,
                               "greedy_margins": margins, "greedy_top_logits": tops})
    return ref


def weights_as_f64(w32):
    return {k: v.astype(np.float64) for k, v in w32.items()}


def build(name):
    seed, cfg, _ = CASES[name]
    w32 = make_weights(cfg, seed, GAINS[name])
    model = Model(cfg, weights_as_f64(w32))
    prompts = pick_prompts(model, seed, GAINS[name].get("discriminate", ()))
    return cfg, w32, reference_for(model, name, prompts)


def greedy_recompute(model, ids, steps):
    """Greedy decoding that re-runs the whole sequence each step (no cache): what an engine
    that re-rotates every key with the current frequencies would produce."""
    seq, toks = list(ids), []
    model.reset()
    last = model.forward(seq)[-1]
    logits = last
    for s in range(steps):
        t = int(np.argmax(logits))
        toks.append(t)
        seq.append(t)
        if s + 1 < steps:
            model.reset()
            logits = model.forward(seq)[-1]
    return last, toks, None, None, None


NO_CACHE = "no KV-cache semantics: all keys re-rotated every step"
KEEP_CACHE = "cache kept across the short->long switch"


def margin_summary(ref):
    rels = []
    for p in ref["prompts"]:
        rels += [m / abs(t) if t else 0 for m, t in zip(p["greedy_margins"], p["greedy_top_logits"])]
    mins = min(min(p["greedy_margins"]) for p in ref["prompts"])
    maxs = max(max(p["greedy_margins"]) for p in ref["prompts"])
    top = max(max(abs(x) for x in p["last_logits"]) for p in ref["prompts"])
    return mins, maxs, min(rels), top


def write_case(out, name):
    cfg, w32, ref = build(name)
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    write_safetensors(os.path.join(d, "model.safetensors"), w32)
    with open(os.path.join(d, "reference.json"), "w") as f:
        json.dump(ref, f)
        f.write("\n")
    tok = os.path.join(DEFAULT_TINY, "tokenizer.json")
    if os.path.exists(tok):
        shutil.copyfile(tok, os.path.join(d, "tokenizer.json"))
    elif not os.path.exists(os.path.join(d, "tokenizer.json")):
        raise FileNotFoundError(f"{tok}: the byte-level tokenizer to copy is missing")
    size = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d))
    mins, maxs, minrel, top = margin_summary(ref)
    print(f"{name:24s} {size / 1024:6.0f} KB  margins min {mins:.4f} max {maxs:.4f}  "
          f"min margin/top {minrel:.3f}  max|logit| {top:.2f}")


def check_case(out, name):
    d = os.path.join(out, name)
    with open(os.path.join(d, "config.json")) as f:
        cfg_stored = json.load(f)
    with open(os.path.join(d, "reference.json")) as f:
        ref_stored = json.load(f)
    w_stored = read_safetensors(os.path.join(d, "model.safetensors"))
    problems = []
    seed, cfg, _ = CASES[name]
    if cfg_stored != json.loads(json.dumps(cfg)):
        problems.append("config.json differs from the generator's")
    w32 = make_weights(cfg, seed, GAINS[name])
    if set(w32) != set(w_stored):
        problems.append(f"tensor names differ: {sorted(set(w32) ^ set(w_stored))}")
    else:
        bad = [k for k in w32 if not np.array_equal(w32[k].astype(np.float64), w_stored[k])]
        if bad:
            problems.append(f"tensors differ from the generator's: {bad}")
    # recompute from the stored files alone
    worst = 0.0
    try:
        model = Model(cfg_stored, w_stored)
        ref = reference_for(model, name, [p["ids"] for p in ref_stored["prompts"]])
    except (ValueError, KeyError) as e:
        problems.append(f"the stored files do not run: {e}")
        ref = {"prompts": []}
    for a, b in zip(ref["prompts"], ref_stored["prompts"]):
        diff = float(np.max(np.abs(np.asarray(a["last_logits"]) - np.asarray(b["last_logits"]))))
        worst = max(worst, diff / max(abs(x) for x in b["last_logits"]))
        if a["greedy_8"] != b["greedy_8"]:
            problems.append(f"prompt of {len(a['ids'])}: greedy {a['greedy_8']} != stored {b['greedy_8']}")
    if worst > 1e-12:
        problems.append(f"last_logits differ by {worst:.3g} (relative)")
    fresh_prompts = pick_prompts(Model(cfg, weights_as_f64(w32)), seed, GAINS[name].get("discriminate", ()))
    if fresh_prompts != [p["ids"] for p in ref_stored["prompts"]]:
        problems.append("prompt selection differs from the stored prompts")
    mins, maxs, minrel, top = margin_summary(ref_stored)
    status = "OK  " if not problems else "FAIL"
    print(f"{status} {name:24s} max rel diff {worst:.2e}  margins min {mins:.4f} max {maxs:.4f}  "
          f"min margin/top {minrel:.3f}")
    for p in problems:
        print(f"     {name}: {p}")
    return not problems


def self_check(tiny):
    with open(os.path.join(tiny, "config.json")) as f:
        cfg = json.load(f)
    with open(os.path.join(tiny, "reference.json")) as f:
        ref = json.load(f)
    model = Model(cfg, read_safetensors(os.path.join(tiny, "model.safetensors")))
    worst, ok = 0.0, True
    for p in ref["prompts"]:
        n = len(p["greedy_16"])
        last, toks, margins, tops, rel = greedy(model, p["ids"], n)
        diff = float(np.max(np.abs(last - np.asarray(p["last_logits_f32"]))))
        worst = max(worst, diff)
        same = toks == p["greedy_16"]
        ok &= same
        print(f"prompt of {len(p['ids']):3d}: max |diff| last_logits_f32 {diff:.3e}  greedy_16 "
              f"{'equal' if same else 'DIFFERENT: ' + str(toks)}")
    ok &= worst < 1e-4
    print(f"self-check {'OK' if ok else 'FAILED'}: max abs diff {worst:.3e} (must be < 1e-4), "
          f"{len(ref['prompts'])} prompts")
    return ok


def _drop(pattern):
    def f(cfg, w):
        return cfg, {k: v for k, v in w.items() if pattern not in k}
    return f


def _cfg(**kw):
    def f(cfg, w):
        c = copy.deepcopy(cfg)
        for k, v in kw.items():
            if v is _DEL:
                c.pop(k, None)
            else:
                c[k] = v
        return c, w
    return f


def _rope(**kw):
    def f(cfg, w):
        c = copy.deepcopy(cfg)
        key = "rope_parameters" if "rope_parameters" in c else "rope_scaling"
        c[key] = dict(c.get(key) or {})
        for k, v in kw.items():
            if v is _DEL:
                c[key].pop(k, None)
            else:
                c[key][k] = v
        return c, w
    return f


_DEL = object()
# What a plausible engine mistake gives for each case: the fixture must tell it apart.
ABLATIONS = {
    "llama3-rope-tied": [("rope_scaling ignored", _cfg(rope_scaling=None))],
    "llama3-rope-params-v5": [("rope_parameters ignored (default, theta 10000)", _cfg(rope_parameters=_DEL))],
    "default-rope-params-v5": [("rope_theta 10000 instead of rope_parameters' 500000",
                                _rope(rope_theta=10000.0))],
    "linear-rope": [("no linear scaling", _rope(rope_type="default"))],
    "dynamic-rope": [(NO_CACHE, _cfg()),
                     ("no dynamic scaling", _rope(rope_type="default")),
                     ("linear instead of dynamic", _rope(rope_type="linear"))],
    "yarn-rope": [("attention_factor 1", _rope(attention_factor=1.0)),
                  ("no truncation of the correction range", _rope(truncate=False)),
                  ("no yarn", _rope(rope_type="default"))],
    "mlp-bias": [("mlp biases ignored", lambda c, w: (c, {k: v for k, v in w.items() if not k.endswith(".bias")}))],
    "gelu-act": [("tanh-approximated gelu", _cfg(hidden_act="gelu_pytorch_tanh")),
                 ("silu", _cfg(hidden_act="silu"))],
    "gelu-tanh-act": [("exact erf gelu", _cfg(hidden_act="gelu"))],
    "attention-bias": [("o_proj bias ignored", _drop("o_proj.bias")),
                       ("all attention biases ignored", lambda c, w: (c, {k: v for k, v in w.items()
                                                                           if not k.endswith(".bias")}))],
    "qwen2": [("sliding_window applied although use_sliding_window is false", _cfg(use_sliding_window=True,
                                                                                    layer_types=["sliding_attention"] * 2))],
    "qwen3": [("no q_norm/k_norm", lambda c, w: (c, {k: (np.ones_like(v) if k.endswith("_norm.weight") and
                                                           "self_attn" in k else v) for k, v in w.items()}))],
    "mistral-sliding-window": [("no sliding window", _cfg(sliding_window=None)),
                               ("window off by one (i - j <= 16)", _cfg(sliding_window=17))],
    "phi3-longrope": [(KEEP_CACHE, _cfg()),
                      ("short_factor always", _rope(long_factor=None)),
                      ("long_factor always", _rope(short_factor=None)),
                      ("no attention factor", _rope(attention_factor=1.0))],
    "phi4-mini": [(KEEP_CACHE, _cfg()),
                  ("rotary on the whole head (factors padded with 1)", lambda c, w: (dict(
        c, partial_rotary_factor=1.0, rope_scaling=dict(c["rope_scaling"], **{
            k: c["rope_scaling"][k] + [1.0, 1.0] for k in ("long_factor", "short_factor")})), w)),
                  ("short_factor always", _rope(long_factor=None))],
    "qwen3-params-v5": [("rope_theta 10000 instead of 1e6", _rope(rope_theta=10000.0))],
    "gemma2": [("no attention soft-capping", _cfg(attn_logit_softcapping=None)),
               ("RMSNorm x w instead of x (1 + w)", lambda c, w: (c, {k: (v + 1.0 if k.endswith("norm.weight") else v)
                                                                     for k, v in w.items()})),
               ("no embedding scale", lambda c, w: (c, dict(w, **{"model.embed_tokens.weight":
                                                                  w["model.embed_tokens.weight"] / 8.0}))),
               ("no final soft-capping", _cfg(final_logit_softcapping=None)),
               ("scaling head_dim^-0.5 instead of query_pre_attn_scalar", _cfg(query_pre_attn_scalar=16)),
               ("no sliding window", _cfg(sliding_window=10 ** 6))],
    "gemma3-text-params-v5": [("one rope dict for all layers (full_attention's)", lambda c, w: (dict(
        c, rope_parameters=c["rope_parameters"]["full_attention"]), w))],
    "mixtral": [("top-1 instead of top-2", _cfg(num_experts_per_tok=1)),
                ("top-3 instead of top-2", _cfg(num_experts_per_tok=3)),
                ("router weights not renormalised", _cfg(_ablate_no_renormalisation=True))],
    "qwen3-moe": [("norm_topk_prob applied although false", _cfg(norm_topk_prob=True)),
                  ("top-2 instead of top-3", _cfg(num_experts_per_tok=2)),
                  ("no q_norm/k_norm", lambda c, w: (c, {k: (np.ones_like(v) if k.endswith("_norm.weight") and
                                                               "self_attn" in k else v) for k, v in w.items()}))],
    "gemma3-text": [("global rope_theta on sliding layers too", _cfg(rope_local_base_freq=1000000.0)),
                    ("no linear scaling on global layers", _cfg(rope_scaling=None)),
                    ("no sliding window", _cfg(sliding_window=10 ** 6))],
}


def ablate(out, name):
    """Recompute the stored prompts with a plausible mistake; print how far it lands."""
    d = os.path.join(out, name)
    with open(os.path.join(d, "config.json")) as f:
        cfg = json.load(f)
    with open(os.path.join(d, "reference.json")) as f:
        ref = json.load(f)
    w = read_safetensors(os.path.join(d, "model.safetensors"))
    for label, fn in ABLATIONS.get(name, []):
        if fn is None:
            continue
        c2, w2 = fn(cfg, w)
        if "long_factor" in str(label) or "short_factor" in str(label):
            key = "rope_parameters" if "rope_parameters" in c2 else "rope_scaling"
            rs = c2[key]
            if rs.get("long_factor") is None:
                rs["long_factor"] = cfg[key]["short_factor"]
            if rs.get("short_factor") is None:
                rs["short_factor"] = cfg[key]["long_factor"]
        m = Model(c2, w2)
        worst, changed = 0.0, 0
        for p in ref["prompts"]:
            run = greedy_recompute if label == NO_CACHE else greedy
            if label == KEEP_CACHE:
                m.phi3_switch_reset = False
            last, toks, _, _, _ = run(m, p["ids"], GREEDY_STEPS)
            worst = max(worst, float(np.max(np.abs(last - np.asarray(p["last_logits"]))))
                        / max(abs(x) for x in p["last_logits"]))
            changed += toks != p["greedy_8"]
        if worst > 100 * TOLERANCE_REL or changed:
            verdict = "caught"
        elif worst > TOLERANCE_REL:
            verdict = f"caught by last_logits only, {worst / TOLERANCE_REL:.1f}x the tolerance"
        else:
            verdict = "MISSED"
        print(f"{name:24s} {label:58s} rel diff {worst:9.2e}  greedy changed in {changed}/"
              f"{len(ref['prompts'])} prompts  {verdict}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--out", metavar="DIR", help="write the fixtures under DIR")
    g.add_argument("--check", metavar="DIR", help="recompute and compare with the fixtures under DIR")
    g.add_argument("--self-check", action="store_true", help="reproduce tiny-llama's reference.json")
    g.add_argument("--list", action="store_true", help="list the cases")
    g.add_argument("--ablate", metavar="DIR", help="show how far plausible engine mistakes land from the fixtures")
    ap.add_argument("--only", metavar="CASE", action="append", help="only this case (repeatable)")
    ap.add_argument("--group", type=int, help="only the cases of this group")
    ap.add_argument("--tiny", default=DEFAULT_TINY, help="tiny-llama fixture directory for --self-check")
    a = ap.parse_args(argv)
    names = list(CASES)
    if a.only:
        unknown = [n for n in a.only if n not in CASES]
        if unknown:
            ap.error(f"--only: unknown case {unknown[0]!r}; known: {', '.join(CASES)}")
        names = a.only
    if a.group:
        names = [n for n in names if CASES[n][2] == a.group]
    if a.list:
        for n in names:
            print(n)
        return 0
    if a.ablate:
        for n in names:
            ablate(a.ablate, n)
        return 0
    if a.self_check:
        return 0 if self_check(a.tiny) else 1
    if a.out:
        for n in names:
            write_case(a.out, n)
        return 0
    present = [n for n in names if os.path.isdir(os.path.join(a.check, n))]
    missing = [n for n in names if n not in present]
    ok = all([check_case(a.check, n) for n in present])
    for n in missing:
        print(f"MISSING {n}: no directory {os.path.join(a.check, n)}")
    print(f"checked {len(present)} cases: {'all OK' if ok and not missing else 'FAILURES'}")
    return 0 if ok and not missing else 1


if __name__ == "__main__":
    sys.exit(main())
