"""Write the matmul, attention and conv engines' benchmark specs for `scripts/bench_rows.py run`, which times them.

    python scripts/bench_matmul.py DIR [--variants] [--match TEXT]   (any machine: each spec's files at the default
        configuration, or those holding TEXT; with --variants the search's first three and four fixed tiles beside)
    python scripts/bench_rows.py run DIR OUT [--variants]   (the accelerator)
"""
import json
import sys
from pathlib import Path

from agent.generators.base import LaunchConfig
from agent.generators.offline.dispatch import OfflineGenerator
from agent.reader.read import read_spec
from agent.runtime.devices import DeviceInfo

SPECS = [
    "C = A @ B, A [4096, 4096] fp16, B [4096, 4096] fp16",
    "C = A @ B, A [4096, 4096] bf16, B [4096, 4096] bf16",
    "C = A @ B, A [8192, 4096] fp16, B [4096, 8192] fp16",
    "C = A @ B, A [8192, 4096] bf16, B [4096, 8192] bf16",
    "C = A @ B, A [1027, 1533] fp16, B [1533, 771] fp16",
    # Rows off 16-byte boundaries: multiplied as padded copies.
    "C = A @ B, A [1000, 1000] fp16, B [1000, 1000] fp16",
    "F.linear(x, w) x [2049, 1023] w [3001, 1023] bf16",
    "C = A @ B, A [4096, 256] bf16, B [256, 4096] bf16",
    "F.gelu(F.linear(x, w, b)) x [8192, 4096] w [4096, 4096] b [4096] fp16",
    "out = x @ w + residual, x [8192, 4096] w [4096, 4096] residual [8192, 4096] bf16",
    # BERT-large's feed-forward block at 8192 tokens: the up-projection with its GELU, the down-projection with
    # its residual.
    "F.gelu(F.linear(x, w, b)) x [8192, 1024] w [4096, 1024] b [4096] fp16",
    "out = x @ w + residual, x [8192, 4096] w [4096, 1024] residual [8192, 1024] fp16",
    "causal attention, q k v [4, 16, 4096, 128] bf16",
    "F.scaled_dot_product_attention(q, k, v) q k v [4, 16, 4096, 128] fp16",
    "causal attention, q k v [2, 16, 8192, 128] bf16",
    "F.scaled_dot_product_attention(q, k, v) q k v [8, 16, 2048, 128] bf16",
    # An additive mask of one [seq, seq] plane, shared by every batch and head.
    "F.scaled_dot_product_attention(q, k, v, attn_mask=m) q k v [4, 16, 2048, 128] m [2048, 2048] fp16",
    "F.scaled_dot_product_attention(q, k, v, attn_mask=m) q k v [4, 16, 4096, 64] m [4096, 4096] bf16",
    # ResNet-50's 3x3 convolutions at batch 32, with the bias and ReLU a fused kernel takes along.
    "relu(conv2d(x, weight, bias, padding=1)), x [32, 64, 56, 56] fp16, weight [64, 64, 3, 3], bias [64]",
    "relu(conv2d(x, weight, bias, padding=1)), x [32, 128, 28, 28] fp16, weight [128, 128, 3, 3], bias [128]",
    "relu(conv2d(x, weight, bias, padding=1)), x [32, 256, 14, 14] fp16, weight [256, 256, 3, 3], bias [256]",
    "relu(conv2d(x, weight, bias, padding=1)), x [32, 512, 7, 7] bf16, weight [512, 512, 3, 3], bias [512]",
    # Few output tiles over a long K: split-K.
    "C = A @ B, A [128, 16384] fp16, B [16384, 128] fp16",
    "F.gelu(F.linear(x, w, b)) x [32, 8192] w [1024, 8192] b [1024] bf16",
    "torch.bmm(a, b) a [4, 64, 16384] b [4, 16384, 64] bf16",
    # BERT-base's feed-forward block at 8192 tokens (d_model 768): the epilogue's share of the bytes grows as K falls.
    "F.gelu(F.linear(x, w, b)) x [8192, 768] w [3072, 768] b [3072] fp16",
    "out = x @ w + residual, x [8192, 3072] w [3072, 768] residual [8192, 768] fp16",
    # Short K, where the epilogue's bytes outweigh the product: a rank-256 update added to a residual stream, and
    # a d_model-512 feed-forward up-projection (T5-small's shape).
    "out = x @ w + residual, x [8192, 256] w [256, 4096] residual [8192, 4096] fp16",
    "F.gelu(F.linear(x, w, b)) x [8192, 512] w [2048, 512] b [2048] fp16",
    # DeiT-Tiny's feed-forward up-projection (d_model 192, 197 tokens x 64 images).
    "F.gelu(F.linear(x, w, b)) x [12608, 192] w [768, 192] b [768] fp16",
    # DeiT-Small's (d_model 384).
    "F.gelu(F.linear(x, w, b)) x [12608, 384] w [1536, 384] b [1536] fp16",
    # A rank-256 GELU projection, and a plain product of 2^32 FLOPs: where the host's launch time shows.
    "F.gelu(F.linear(x, w, b)) x [8192, 256] w [1024, 256] b [1024] fp16",
    "C = A @ B, A [2048, 1024] fp16, B [1024, 1024] fp16",
    # DeiT-Small's up-projection at 128 images: a short K over 2^34 FLOPs (the TMA kernel, host-made descriptors).
    "F.gelu(F.linear(x, w, b)) x [25216, 384] w [1536, 384] b [1536] fp16",
]
H100 = DeviceInfo(kind="cuda", name="NVIDIA H100", multiprocessors=132)
folder = Path(sys.argv[1])
gen = OfflineGenerator()
extra = [LaunchConfig(schedule="tiled", block_m=128, block_size=128, block_k=64, group_m=8, num_warps=4, num_stages=4),
         LaunchConfig(schedule="tiled", block_m=128, block_size=256, block_k=64, group_m=8, num_warps=8, num_stages=4),
         LaunchConfig(schedule="tiled", block_m=256, block_size=128, block_k=64, group_m=8, num_warps=8, num_stages=3),
         LaunchConfig(schedule="tiled", block_m=128, block_size=128, block_k=64, group_m=8, num_warps=8, num_stages=4)]
match = sys.argv[sys.argv.index("--match") + 1] if "--match" in sys.argv else ""
for i, text in enumerate(SPECS):
    if match not in text:
        continue
    spec = read_spec(text)
    assert gen.refusal(spec) is None, gen.refusal(spec)
    schedule = gen.schedules(spec)[0]
    default = gen.default_config(spec, schedule, H100)
    configs = {"default": default}
    if "--variants" in sys.argv:
        for j, c in enumerate(gen.config_space(spec, schedule, H100).kept[:3] + (extra if schedule == "tiled" else [])):
            if c not in configs.values():
                configs[f"v{j}"] = c
    for name, config in configs.items():
        out = folder / f"{i:02d}_{spec.name}" / name
        out.mkdir(parents=True, exist_ok=True)
        for fname, source in gen.generate(spec, config).files.items():
            (out / fname).write_text(source)
        (out / "meta.json").write_text(json.dumps({"spec": text, "op": spec.name, "config": config.label()}))
