"""The BERT encoder of `bert.py`, pooled and normalised, as an ONNX graph for onnxruntime.

Built from the same `config.json` + `model.safetensors` as the NumPy pass (opset 17: Gather, Add,
LayerNormalization, MatMul, the Erf form of the exact GELU, masked mean or CLS pooling, L2 normalisation)
with dynamic batch and sequence axes. Self-attention is onnxruntime's own fused `Attention` kernel in the
fp32 graph, and standard ops (MatMul, Softmax) in the graph the int8 build quantises. The rest is written
in the shapes onnxruntime's optimiser recognises (one MatMul + Add per projection, the Erf GELU, Add +
LayerNorm), so at session start it fuses them into its own BiasGelu and SkipLayerNormalization kernels.

Inputs: `input_ids` int64 (batch, tokens), `attention_mask` float32 (batch, tokens) of 0/1.
Output: `embeddings` float32 (batch, hidden), unit length — what `LocalEmbedder.embed` returns.

The int8 graph quantises the weight projections here (per output column, symmetric, 7 bits) and runs them as
onnxruntime's `DynamicQuantizeMatMul` (activations quantised per call). Building writes the ONNX protobuf
with `proto` (protobuf alone, which onnxruntime brings): neither building nor running needs the `onnx`
package. `python -m infra.local.onnx.encoder_graph MODEL_DIR OUT_DIR` prebuilds the graphs (the Lambda layer does).
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path
from typing import Any, Literal

import numpy as np

from infra.local.onnx import proto
from infra.local.onnx.bert import BertConfig, BertEncoder

# Bump when the graph's construction changes: cached graphs of another version rebuild (4: 7-bit int8 weights).
GRAPH_VERSION = "4"
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
    ids, mask = "input_ids", "attention_mask"
    g = _Encoder(config, fused_attention=variant == "fp32", quantized=variant == "int8")
    x = g.embeddings(enc, ids)
    g.attention_mask(mask)
    for i, layer in enumerate(enc._layers):
        x = g.layer(x, layer, f"l{i}.")
    g.graph.op("Div", *g.pooled(x, mask, pooling), out="embeddings")
    return proto.model(
        g.graph.nodes,
        g.graph.initializers,
        inputs=[
            proto.value_info(ids, proto.INT64, ["batch", "tokens"]),
            proto.value_info(mask, proto.FLOAT, ["batch", "tokens"]),
        ],
        outputs=[proto.value_info("embeddings", proto.FLOAT, ["batch", config.hidden_size])],
        opsets={"": OPSET, "com.microsoft": 1},
        props={"quarry_graph_version": GRAPH_VERSION, "pooling": pooling, "variant": variant},
    )


# Weights are quantised to 7 bits (±63), not 8 (onnxruntime's `reduce_range`): on AVX2 without VNNI its u8×s8
# kernels multiply with vpmaddubsw, which adds two u8·s8 products into an int16 and saturates beyond 32767;
# 255·127·2 = 64770 overflows, 255·63·2 = 32130 never does. With 8-bit weights the reference cosines fell
# from mean 0.9965 / min 0.9859 (AVX-512 VNNI) to 0.9949 / 0.9802 under `qemu-x86_64 -cpu Haswell`.
WEIGHT_LEVELS = 63


def _quantize_columns(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric 7-bit per output column: (scale per column, int8 weights in ±63), w ≈ q · scale."""
    scale = np.abs(w).max(axis=0) / WEIGHT_LEVELS
    scale = np.where(scale > 0, scale, 1.0).astype(np.float32)
    return scale, np.clip(np.rint(w / scale), -WEIGHT_LEVELS, WEIGHT_LEVELS).astype(np.int8)


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
            proto.node(op_type, inputs, [name], name=node or f"n{self._n}", domain=domain, **attrs)
        )
        return name

    def const(self, name: str, value: Any) -> str:
        array = np.asarray(value)
        if array.dtype != np.int8:
            array = array.astype(np.int64 if array.dtype.kind in "iu" else np.float32)
        self.initializers.append(proto.tensor(name, array))
        return name

    def scalar(self, name: str, value: float) -> str:
        return self.const(name, np.float32(value))


class _Encoder:
    """The encoder's parts written as graph nodes, in the order bert.py computes them (the node and tensor
    names follow that order, so a graph built twice is the same bytes)."""

    def __init__(self, config: BertConfig, fused_attention: bool, quantized: bool) -> None:
        self.graph = _Builder()  # the nodes and initializers written so far
        self.h, self.heads = config.hidden_size, config.num_heads
        self.width = self.h // self.heads
        self.eps = float(config.layer_norm_eps)
        self.fused_attention, self.quantized = fused_attention, quantized

    def embeddings(self, enc: BertEncoder, ids: str) -> str:
        """Word rows + position rows + the token-type-0 row, layer-normalised."""
        x = self.graph.op("Gather", self.graph.const("word", enc._word), ids)
        seq = self.graph.op("Shape", ids, start=1, end=2)
        # position rows + the token-type-0 row: both added to every token, so added once into one table
        positions = self.graph.op(
            "Slice",
            self.graph.const("position", enc._position + enc._token_type),
            self.graph.const("zero", [0]),
            seq,
            self.graph.const("axis0", [0]),
        )
        x = self.graph.op("Add", x, positions)
        return self.norm(x, enc._emb_ln[0], enc._emb_ln[1], "emb_ln")

    def norm(self, inp: str, gamma: np.ndarray, beta: np.ndarray, name: str) -> str:
        return self.graph.op(
            "LayerNormalization",
            inp,
            self.graph.const(name + "_g", gamma),
            self.graph.const(name + "_b", beta),
            axis=-1,
            epsilon=self.eps,
        )

    def attention_mask(self, mask: str) -> None:
        """What self-attention masks padding keys with, for every layer."""
        if self.fused_attention:  # Attention takes the raw 0/1 (batch, tokens) mask and masks padding itself
            self.mask_index = self.graph.op("Cast", mask, to=proto.INT32)
        else:  # padding keys get the most negative float32, as bert.py and Hugging Face do: (1 − mask)·min
            mask4 = self.graph.op("Unsqueeze", mask, self.graph.const("axes12", [1, 2]))
            fmin = self.graph.scalar("fmin", float(np.finfo(np.float32).min))
            self.bias = self.graph.op("Mul", self.graph.op("Sub", self.graph.scalar("one", 1.0), mask4), fmin)
            self.split_heads = self.graph.const("split_heads", [0, 0, self.heads, self.width])
            self.merge_heads = self.graph.const("merge_heads", [0, 0, self.h])

    def dense(self, inp: str, w: np.ndarray, b: np.ndarray, name: str) -> str:
        """One projection: MatMul + Add, or int8 DynamicQuantizeMatMul (all but the down projection)."""
        if self.quantized and not name.endswith("down"):
            scale, q = _quantize_columns(w)
            return self.graph.op(
                "DynamicQuantizeMatMul",
                inp,
                self.graph.const(name + ".wq", q),
                self.graph.const(name + ".scale", scale),
                self.graph.const(name + ".zero", np.zeros_like(q[0])),
                self.graph.const(name + ".b", b),
                domain="com.microsoft",
                node=name,
            )
        product = self.graph.op("MatMul", inp, self.graph.const(name + ".w", w), node=name)
        return self.graph.op("Add", product, self.graph.const(name + ".b", b))

    def layer(self, x: str, layer: Any, p: str) -> str:
        """One transformer layer (`p`: its name prefix): attention, Add + LayerNorm, the Erf GELU
        feed-forward, Add + LayerNorm."""
        attended = self.graph.op(
            "Add", self.dense(self.attention(x, layer, p), layer.out_w, layer.out_b, p + "o"), x
        )
        x = self.norm(attended, layer.ln1_g, layer.ln1_b, p + "ln1")
        up = self.dense(x, layer.up_w, layer.up_b, p + "up")
        erf = self.graph.op("Erf", self.graph.op("Div", up, self.graph.scalar(p + "sqrt2", np.sqrt(2.0))))
        act = self.graph.op(
            "Mul",
            self.graph.op("Mul", up, self.graph.op("Add", erf, self.graph.scalar(p + "one", 1.0))),
            self.graph.scalar(p + "half", 0.5),
        )
        out = self.graph.op("Add", self.dense(act, layer.down_w, layer.down_b, p + "down"), x)
        return self.norm(out, layer.ln2_g, layer.ln2_b, p + "ln2")

    def attention(self, x: str, layer: Any, p: str) -> str:
        """Self-attention's context: onnxruntime's fused kernel, or scaled masked softmax in standard ops."""
        if self.fused_attention:
            return self.graph.op(
                "Attention",
                x,
                self.graph.const(p + "qkv.w", layer.qkv_w),
                self.graph.const(p + "qkv.b", layer.qkv_b),
                self.mask_index,
                domain="com.microsoft",
                num_heads=self.heads,
                node=p + "attention",
            )
        h = self.h
        q, k, v = (
            self.dense(x, layer.qkv_w[:, j * h : (j + 1) * h], layer.qkv_b[j * h : (j + 1) * h], p + n)
            for j, n in enumerate(("q", "k", "v"))
        )
        q = self.graph.op("Transpose", self.graph.op("Reshape", q, self.split_heads), perm=[0, 2, 1, 3])
        k = self.graph.op("Transpose", self.graph.op("Reshape", k, self.split_heads), perm=[0, 2, 3, 1])
        v = self.graph.op("Transpose", self.graph.op("Reshape", v, self.split_heads), perm=[0, 2, 1, 3])
        scores = self.graph.op(
            "Mul", self.graph.op("MatMul", q, k), self.graph.scalar(p + "scale", 1.0 / np.sqrt(self.width))
        )
        probs = self.graph.op("Softmax", self.graph.op("Add", scores, self.bias), axis=-1)
        merged = self.graph.op("Transpose", self.graph.op("MatMul", probs, v), perm=[0, 2, 1, 3])
        return self.graph.op("Reshape", merged, self.merge_heads)

    def pooled(self, x: str, mask: str, pooling: Pooling) -> tuple[str, str]:
        """(pooled states, their L2 length): the CLS token's state, or the mean over the mask."""
        if pooling == "cls":
            pooled = self.graph.op(
                "Squeeze",
                self.graph.op(
                    "Slice",
                    x,
                    self.graph.const("zero1", [0]),
                    self.graph.const("one1", [1]),
                    self.graph.const("axis1", [1]),
                ),
                self.graph.const("axis1b", [1]),
            )
        else:  # mean of the token states over the mask (sentence-transformers' clamp at 1e-9)
            mask3 = self.graph.op("Unsqueeze", mask, self.graph.const("axes2", [2]))
            summed = self.graph.op(
                "ReduceSum", self.graph.op("Mul", x, mask3), self.graph.const("axis1", [1]), keepdims=0
            )
            counts = self.graph.op(
                "Max",
                self.graph.op("ReduceSum", mask, self.graph.const("axis1c", [1]), keepdims=1),
                self.graph.scalar("tiny", 1e-9),
            )
            pooled = self.graph.op("Div", summed, counts)
        length = self.graph.op(
            "Max", self.graph.op("ReduceL2", pooled, axes=[1], keepdims=1), self.graph.scalar("eps12", 1e-12)
        )
        return pooled, length


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
