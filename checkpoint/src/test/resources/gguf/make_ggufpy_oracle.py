"""Writes ggufpy-oracle.gguf with llama.cpp's own Python package (gguf-py): an independent writer and an
independent implementation of ggml's block layouts, against which GgufOracleTest checks graphlane's reader.

For each tensor NAME the file also holds NAME.expected, F32 values that gguf-py's dequantize gives for it,
and for Q8_0 and Q4_0 the values they were quantized from (NAME.source), so the test can compare the test
writer's quantizers byte for byte with gguf-py's ports of ggml's reference quantizers. The K-quant tensors
are random blocks with small, finite super-block scales (gguf-py quantizes no K-quant).

Run: pip install gguf numpy; python3 make_ggufpy_oracle.py  (writes next to this file)
"""
import os

import numpy as np
import gguf
import gguf.quants as q
from gguf import GGMLQuantizationType as T

rng = np.random.default_rng(20261206)
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ggufpy-oracle.gguf")
w = gguf.GGUFWriter(out, arch="llama")
w.add_uint32("test.u32", 7)
w.add_int8("test.i8", -3)
w.add_uint64("test.u64", 1 << 40)
w.add_float64("test.f64", 0.1)
w.add_bool("test.bool", True)
w.add_array("test.strings", ["a", "\u2581b", "\u00e9"])
w.add_array("test.ints", [1, -2, 3])
w.add_string("tokenizer.chat_template", "{{ messages }}")


def add(name, values, raw_type=None):
    if raw_type is None:
        w.add_tensor(name, values)
        expected = values.astype(np.float32)
    else:
        w.add_tensor(name, values, raw_dtype=raw_type)
        expected = q.dequantize(values, raw_type).astype(np.float32)
    w.add_tensor(name + ".expected", expected)


x = rng.standard_normal((3, 5)).astype(np.float32)
add("f32", x)
add("f16", rng.standard_normal((2, 8)).astype(np.float16))
add("bf16", q.quantize(rng.standard_normal((2, 8)).astype(np.float32), T.BF16), T.BF16)
for t in (T.Q8_0, T.Q4_0):
    src = (rng.standard_normal((4, 64)) * 0.5).astype(np.float32)
    add(t.name.lower(), q.quantize(src, t), t)
    w.add_tensor(t.name.lower() + ".source", src)

half = np.dtype("<f2")
for t, d_offsets in ((T.Q4_K, (0, 2)), (T.Q5_K, (0, 2)), (T.Q6_K, (208,))):
    block_values, block_bytes = gguf.GGML_QUANT_SIZES[t]
    rows, blocks = 2, 2
    raw = rng.integers(0, 256, size=(rows, blocks * block_bytes), dtype=np.uint8)
    for r in range(rows):
        for b in range(blocks):
            for off in d_offsets:
                at = b * block_bytes + off
                raw[r, at:at + 2] = np.frombuffer(np.array([rng.uniform(0.01, 0.2)], dtype=half).tobytes(), np.uint8)
    add(t.name.lower(), raw, t)

w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
print("wrote", out, os.path.getsize(out), "bytes")
