"""The BERT encoder of `bert.py`, pooled and normalised, as an ONNX graph for onnxruntime.

Built from the same `config.json` + `model.safetensors` as the NumPy pass (opset 17: Gather, Add,
LayerNormalization, MatMul, the Erf form of the exact GELU, masked mean or CLS pooling, L2 normalisation)
with dynamic batch and sequence axes. Self-attention is onnxruntime's own fused `Attention` kernel in the
fp32 graph, and standard ops (MatMul, Softmax) in the graph the int8 build quantises. The rest is written
in the shapes onnxruntime's optimiser recognises (one MatMul + Add per projection, the Erf GELU, Add +
LayerNorm), so at session start it fuses them into its own BiasGelu and SkipLayerNormalization kernels.

Inputs: `input_ids` int64 (batch, tokens), `attention_mask` float32 (batch, tokens) of 0/1.
Output: `embeddings` float32 (batch, hidden), unit length — what `LocalEmbedder.embed` returns.

The int8 graph quantises the weight projections here (per output column, symmetric) and runs them as
onnxruntime's `DynamicQuantizeMatMul` (activations quantised per call). Building writes the ONNX protobuf
with `onnx_proto` (protobuf alone, which onnxruntime brings): neither building nor running needs the `onnx`
package. `python -m infra.local.onnx_graph MODEL_DIR OUT_DIR` prebuilds the graphs (the Lambda layer does).
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path
from typing import Any, Literal

import numpy as np

from infra.local import onnx_proto
from infra.local.bert import BertConfig, BertEncoder

GRAPH_VERSION = "3"  # bump when the graph's construction changes: cached graphs of another version rebuild
OPSET = 17
Variant = Literal["fp32", "int8"]
Pooling = Literal["mean", "cls"]


def build(model_dir: Path, pooling: Pooling, variant: Variant = "fp32") -> Any:
    """The graph (an ONNX ModelProto) of a model folder; ValueError for an unsupported config.

    fp32: each layer's self-attention is onnxruntime's own `Attention` kernel (contrib domain
    `com.microsoft`: the fused Q/K/V projection, scaled masked softmax and context in one op; SciFact
    abstracts 48/s instead of 43/s on 2 threads, worst cosine to the standard-op form 0.9999991).
    int8: attention in standard ops, every weight projection but the feed-forward down projection int8."""
    from safetensors.numpy import load_file

    config = BertConfig.from_file(model_dir / "config.json")
    # BertEncoder validates the weights and names what is missing; its fused Q/K/V matrix is split back
    # into three projections below (the layout onnxruntime's fusions expect).
    try:
        weights = load_file(str(model_dir / "model.safetensors"))
    except Exception as exc:  # the Rust parser's errors do not name the file
        raise ValueError(f"model.safetensors: {type(exc).__name__}: {exc}") from exc
    enc = BertEncoder(config, weights)
    fused_attention, quantized = variant == "fp32", variant == "int8"
    g = _Builder()
    h, heads = config.hidden_size, config.num_heads
    width = h // heads
    eps = float(config.layer_norm_eps)

    ids, mask = "input_ids", "attention_mask"
    x = g.op("Gather", g.const("word", enc._word), ids)
    seq = g.op("Shape", ids, start=1, end=2)
    # position rows + the token-type-0 row: both added to every token, so added once into one table
    positions = g.op(
        "Slice",
        g.const("position", enc._position + enc._token_type),
        g.const("zero", [0]),
        seq,
        g.const("axis0", [0]),
    )
    x = g.op("Add", x, positions)

    def norm(inp: str, gamma: np.ndarray, beta: np.ndarray, name: str) -> str:
        return g.op(
            "LayerNormalization",
            inp,
            g.const(name + "_g", gamma),
            g.const(name + "_b", beta),
            axis=-1,
            epsilon=eps,
        )

    x = norm(x, enc._emb_ln[0], enc._emb_ln[1], "emb_ln")
    if fused_attention:  # Attention takes the raw 0/1 (batch, tokens) mask and masks padding keys itself
        mask_index = g.op("Cast", mask, to=onnx_proto.INT32)
    else:  # padding keys get the most negative float32, as bert.py and Hugging Face do: (1 − mask)·min
        mask4 = g.op("Unsqueeze", mask, g.const("axes12", [1, 2]))
        fmin = g.scalar("fmin", float(np.finfo(np.float32).min))
        bias = g.op("Mul", g.op("Sub", g.scalar("one", 1.0), mask4), fmin)
        split_heads = g.const("split_heads", [0, 0, heads, width])
        merge_heads = g.const("merge_heads", [0, 0, h])
    for i, layer in enumerate(enc._layers):
        p = f"l{i}."

        def dense(inp: str, w: np.ndarray, b: np.ndarray, name: str, p: str = p) -> str:
            if quantized and name != "down":
                scale, q = _quantize_columns(w)
                return g.op(
                    "DynamicQuantizeMatMul",
                    inp,
                    g.const(p + name + ".wq", q),
                    g.const(p + name + ".scale", scale),
                    g.const(p + name + ".zero", np.zeros_like(q[0])),
                    g.const(p + name + ".b", b),
                    domain="com.microsoft",
                    node=p + name,
                )
            product = g.op("MatMul", inp, g.const(p + name + ".w", w), node=p + name)
            return g.op("Add", product, g.const(p + name + ".b", b))

        if fused_attention:
            context = g.op(
                "Attention",
                x,
                g.const(p + "qkv.w", layer.qkv_w),
                g.const(p + "qkv.b", layer.qkv_b),
                mask_index,
                domain="com.microsoft",
                num_heads=heads,
                node=p + "attention",
            )
        else:
            q, k, v = (
                dense(x, layer.qkv_w[:, j * h : (j + 1) * h], layer.qkv_b[j * h : (j + 1) * h], n)
                for j, n in enumerate(("q", "k", "v"))
            )
            q = g.op("Transpose", g.op("Reshape", q, split_heads), perm=[0, 2, 1, 3])
            k = g.op("Transpose", g.op("Reshape", k, split_heads), perm=[0, 2, 3, 1])
            v = g.op("Transpose", g.op("Reshape", v, split_heads), perm=[0, 2, 1, 3])
            scores = g.op("Mul", g.op("MatMul", q, k), g.scalar(p + "scale", 1.0 / np.sqrt(width)))
            probs = g.op("Softmax", g.op("Add", scores, bias), axis=-1)
            merged = g.op("Transpose", g.op("MatMul", probs, v), perm=[0, 2, 1, 3])
            context = g.op("Reshape", merged, merge_heads)
        attended = g.op("Add", dense(context, layer.out_w, layer.out_b, "o"), x)
        x = norm(attended, layer.ln1_g, layer.ln1_b, p + "ln1")
        up = dense(x, layer.up_w, layer.up_b, "up")
        erf = g.op("Erf", g.op("Div", up, g.scalar(p + "sqrt2", np.sqrt(2.0))))
        act = g.op(
            "Mul", g.op("Mul", up, g.op("Add", erf, g.scalar(p + "one", 1.0))), g.scalar(p + "half", 0.5)
        )
        out = g.op("Add", dense(act, layer.down_w, layer.down_b, "down"), x)
        x = norm(out, layer.ln2_g, layer.ln2_b, p + "ln2")

    if pooling == "cls":
        pooled = g.op(
            "Squeeze",
            g.op("Slice", x, g.const("zero1", [0]), g.const("one1", [1]), g.const("axis1", [1])),
            g.const("axis1b", [1]),
        )
    else:  # mean of the token states over the mask (sentence-transformers' clamp at 1e-9)
        mask3 = g.op("Unsqueeze", mask, g.const("axes2", [2]))
        summed = g.op("ReduceSum", g.op("Mul", x, mask3), g.const("axis1", [1]), keepdims=0)
        counts = g.op(
            "Max", g.op("ReduceSum", mask, g.const("axis1c", [1]), keepdims=1), g.scalar("tiny", 1e-9)
        )
        pooled = g.op("Div", summed, counts)
    length = g.op("Max", g.op("ReduceL2", pooled, axes=[1], keepdims=1), g.scalar("eps12", 1e-12))
    g.op("Div", pooled, length, out="embeddings")

    return onnx_proto.model(
        g.nodes,
        g.initializers,
        inputs=[
            onnx_proto.value_info(ids, onnx_proto.INT64, ["batch", "tokens"]),
            onnx_proto.value_info(mask, onnx_proto.FLOAT, ["batch", "tokens"]),
        ],
        outputs=[onnx_proto.value_info("embeddings", onnx_proto.FLOAT, ["batch", h])],
        opsets={"": OPSET, "com.microsoft": 1},
        props={"quarry_graph_version": GRAPH_VERSION, "pooling": pooling, "variant": variant},
    )


def _quantize_columns(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 per output column: (scale per column, int8 weights), w ≈ q · scale."""
    scale = np.abs(w).max(axis=0) / 127.0
    scale = np.where(scale > 0, scale, 1.0).astype(np.float32)
    return scale, np.clip(np.rint(w / scale), -127, 127).astype(np.int8)


class _Builder:
    """Nodes and initializers with generated names (keeps the graph code close to bert.py's)."""

    def __init__(self) -> None:
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self._n = 0

    def op(
        self,
        op_type: str,
        *inputs: str,
        out: str | None = None,
        node: str | None = None,
        domain: str = "",
        **attrs: Any,
    ) -> str:
        self._n += 1
        name = out or f"{op_type.lower()}_{self._n}"
        self.nodes.append(
            onnx_proto.node(op_type, inputs, [name], name=node or f"n{self._n}", domain=domain, **attrs)
        )
        return name

    def const(self, name: str, value: Any) -> str:
        array = np.asarray(value)
        if array.dtype != np.int8:
            array = array.astype(np.int64 if array.dtype.kind in "iu" else np.float32)
        self.initializers.append(onnx_proto.tensor(name, array))
        return name

    def scalar(self, name: str, value: float) -> str:
        return self.const(name, np.float32(value))


def write_graph(model_dir: Path, pooling: Pooling, variant: Variant, target: Path) -> None:
    """Build `variant` into `target` atomically: a temporary file in the same folder, then a rename, so a
    reader (or a second builder) only ever sees a whole graph."""
    target.parent.mkdir(parents=True, exist_ok=True)
    data = build(model_dir, pooling, variant).SerializeToString()
    handle, scratch = tempfile.mkstemp(dir=target.parent, prefix=".build-", suffix=".onnx")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(scratch, target)
    except BaseException:
        Path(scratch).unlink(missing_ok=True)
        raise


def prebuilt_name(variant: Variant, pooling: Pooling) -> str:
    """The file name of a graph shipped inside a model folder (`onnx/quarry-int8-mean.onnx`)."""
    return f"quarry-{variant}-{pooling}.onnx"


def main() -> int:
    parser = argparse.ArgumentParser(description="Prebuild the ONNX graphs of a model folder.")
    parser.add_argument("model_dir", type=Path)
    parser.add_argument("out_dir", type=Path, help="usually MODEL_DIR/onnx (where the embedder looks first)")
    parser.add_argument("--variant", choices=["fp32", "int8"], action="append")
    parser.add_argument("--pooling", choices=["mean", "cls"], default="mean")
    args = parser.parse_args()
    for variant in args.variant or ["fp32", "int8"]:
        target = args.out_dir / prebuilt_name(variant, args.pooling)
        write_graph(args.model_dir, args.pooling, variant, target)
        print(f"{target} ({target.stat().st_size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
