"""A BERT encoder forward pass in NumPy (float32): what sentence-transformers runs on torch, without torch.

The architecture (layers, hidden size, heads, LayerNorm eps, activation) is read from the model folder's
`config.json` and the weights from `model.safetensors`, so any BERT-family checkpoint works. Weights are
rearranged once at load for the hot path: Q, K and V fused into one (hidden, 3·hidden) matrix, every
dense layer stored transposed (x @ W), so a layer is four projections and a few in-place element-wise
passes. Each projection runs one matmul per sequence (`dense`): a sequence's hidden states are then the
same, bit for bit, whatever other sequences share its batch.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

# Abramowitz & Stegun 7.1.26: erf(x) ≈ 1 − (a1·t + … + a5·t⁵)·e^(−x²), t = 1/(1 + p·x), |error| ≤ 1.5e-7.
# NumPy has no erf; this keeps the exact GELU within float32 noise (the reference test checks it).
_AS_P = np.float32(0.3275911)
_AS_A = tuple(np.float32(a) for a in (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429))
_INV_SQRT2 = np.float32(1.0 / np.sqrt(2.0))
_SUPPORTED_ACTIVATIONS = ("gelu",)


@dataclass(frozen=True, slots=True)
class BertConfig:
    """The architecture fields of a Hugging Face BERT `config.json` that the forward pass needs."""

    hidden_size: int
    num_layers: int
    num_heads: int
    intermediate_size: int
    layer_norm_eps: float
    max_positions: int
    activation: str

    @classmethod
    def from_file(cls, path: Path) -> BertConfig:
        """Read and check `config.json`; ValueError names what is missing or unsupported."""
        raw: dict[str, Any] = json.loads(path.read_text())
        try:
            config = cls(
                hidden_size=int(raw["hidden_size"]),
                num_layers=int(raw["num_hidden_layers"]),
                num_heads=int(raw["num_attention_heads"]),
                intermediate_size=int(raw["intermediate_size"]),
                layer_norm_eps=float(raw.get("layer_norm_eps", 1e-12)),
                max_positions=int(raw.get("max_position_embeddings", 512)),
                activation=str(raw.get("hidden_act", "gelu")),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{path}: not a BERT config ({exc})") from exc
        if config.activation not in _SUPPORTED_ACTIVATIONS:
            raise ValueError(f"{path}: hidden_act {config.activation!r} is not supported (only exact gelu)")
        if config.hidden_size % config.num_heads:
            raise ValueError(f"{path}: hidden_size is not a multiple of num_attention_heads")
        return config


@dataclass(frozen=True, slots=True)
class _Layer:
    qkv_w: np.ndarray  # (hidden, 3·hidden)
    qkv_b: np.ndarray
    out_w: np.ndarray  # (hidden, hidden)
    out_b: np.ndarray
    ln1_g: np.ndarray
    ln1_b: np.ndarray
    up_w: np.ndarray  # (hidden, intermediate)
    up_b: np.ndarray
    down_w: np.ndarray  # (intermediate, hidden)
    down_b: np.ndarray
    ln2_g: np.ndarray
    ln2_b: np.ndarray


def gelu(x: np.ndarray) -> np.ndarray:
    """Exact GELU, x·Φ(x) = 0.5·x·(1 + erf(x/√2)) (Hendrycks & Gimpel 2016), in place on a float32 array."""
    z = x * _INV_SQRT2
    a = np.abs(z)
    t = 1.0 / (1.0 + _AS_P * a)
    poly = _AS_A[4] * t
    for coef in (_AS_A[3], _AS_A[2], _AS_A[1], _AS_A[0]):
        poly += coef
        poly *= t
    np.square(a, out=a)
    np.negative(a, out=a)
    np.exp(a, out=a)
    poly *= a  # poly = 1 − erf(|z|)
    np.copysign(1.0 - poly, z, out=poly)  # erf(z)
    poly += 1.0
    poly *= 0.5
    x *= poly
    return x


def layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float) -> np.ndarray:
    """LayerNorm over the last axis (Ba et al. 2016), in place."""
    mean = x.mean(axis=-1, keepdims=True)
    x -= mean
    var = np.mean(np.square(x), axis=-1, keepdims=True)
    var += eps
    np.sqrt(var, out=var)
    x /= var
    x *= gamma
    x += beta
    return x


class BertEncoder:
    """Token ids + attention mask → last hidden states, for one BERT checkpoint held in memory."""

    def __init__(self, config: BertConfig, weights: dict[str, np.ndarray]) -> None:
        self.config = config
        prefix = "bert." if "bert.embeddings.word_embeddings.weight" in weights else ""

        def w(name: str) -> np.ndarray:
            try:
                return np.ascontiguousarray(weights[prefix + name], dtype=np.float32)
            except KeyError as exc:
                raise ValueError(f"model weights lack {prefix + name}") from exc

        self._word = w("embeddings.word_embeddings.weight")
        self._position = w("embeddings.position_embeddings.weight")
        self._token_type = w("embeddings.token_type_embeddings.weight")[0]
        self._emb_ln = (w("embeddings.LayerNorm.weight"), w("embeddings.LayerNorm.bias"))
        self._layers = [self._layer(w, f"encoder.layer.{i}.") for i in range(config.num_layers)]

    @staticmethod
    def _layer(w: Any, p: str) -> _Layer:
        att = p + "attention."
        return _Layer(
            qkv_w=np.ascontiguousarray(
                np.concatenate([w(att + f"self.{n}.weight") for n in ("query", "key", "value")]).T
            ),
            qkv_b=np.concatenate([w(att + f"self.{n}.bias") for n in ("query", "key", "value")]),
            out_w=np.ascontiguousarray(w(att + "output.dense.weight").T),
            out_b=w(att + "output.dense.bias"),
            ln1_g=w(att + "output.LayerNorm.weight"),
            ln1_b=w(att + "output.LayerNorm.bias"),
            up_w=np.ascontiguousarray(w(p + "intermediate.dense.weight").T),
            up_b=w(p + "intermediate.dense.bias"),
            down_w=np.ascontiguousarray(w(p + "output.dense.weight").T),
            down_b=w(p + "output.dense.bias"),
            ln2_g=w(p + "output.LayerNorm.weight"),
            ln2_b=w(p + "output.LayerNorm.bias"),
        )

    @property
    def vocab_size(self) -> int:
        return int(self._word.shape[0])

    def forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """(batch, tokens) int ids and 0/1 mask → (batch, tokens, hidden) float32 hidden states."""
        cfg = self.config
        batch, tokens = ids.shape
        x = self._word[ids]
        x += self._position[:tokens]
        x += self._token_type
        x = x.reshape(batch * tokens, cfg.hidden_size)
        layer_norm(x, *self._emb_ln, cfg.layer_norm_eps)
        # Padding keys get the most negative float32 (as Hugging Face's extended attention mask does).
        bias = ((1.0 - mask.astype(np.float32)) * np.finfo(np.float32).min)[:, None, None, :]
        for layer in self._layers:
            x = self._block(x, layer, bias, batch, tokens)
        return x.reshape(batch, tokens, cfg.hidden_size)

    def _block(self, x: np.ndarray, layer: _Layer, bias: np.ndarray, batch: int, tokens: int) -> np.ndarray:
        cfg = self.config
        heads, width = cfg.num_heads, cfg.hidden_size // cfg.num_heads
        qkv = dense(x, layer.qkv_w, layer.qkv_b, tokens)
        qkv = qkv.reshape(batch, tokens, 3, heads, width).transpose(2, 0, 3, 1, 4)  # (3, B, H, T, W)
        scores = qkv[0] @ qkv[1].transpose(0, 1, 3, 2)
        scores *= np.float32(1.0 / np.sqrt(width))
        scores += bias
        scores -= scores.max(axis=-1, keepdims=True)
        np.exp(scores, out=scores)
        scores /= scores.sum(axis=-1, keepdims=True)
        context = (scores @ qkv[2]).transpose(0, 2, 1, 3).reshape(batch * tokens, cfg.hidden_size)
        attended = dense(context, layer.out_w, layer.out_b, tokens)
        attended += x
        x = layer_norm(attended, layer.ln1_g, layer.ln1_b, cfg.layer_norm_eps)
        hidden = dense(x, layer.up_w, layer.up_b, tokens)
        gelu(hidden)
        out = dense(hidden, layer.down_w, layer.down_b, tokens)
        out += x
        return layer_norm(out, layer.ln2_g, layer.ln2_b, cfg.layer_norm_eps)


def dense(x: np.ndarray, w: np.ndarray, b: np.ndarray, rows: int) -> np.ndarray:
    """x @ w + b as one matmul per `rows` rows of x (one sequence's tokens), never one over the batch.

    A BLAS does not round a row's dot products the same wherever the row sits in a matrix: OpenBLAS's
    Haswell sgemm kernel (AVX2, also picked on Zen) rounds rows 0–5 of every 12 one way, rows 6–11 another
    and a tail block a third, and two threads split the rows elsewhere for each row count (measured with
    `OPENBLAS_CORETYPE=Haswell`; its SkylakeX kernel happens not to). In a matmul of its own, a sequence's
    token t is always row t of a matrix of the same shape, whatever was batched with it, so its states are
    the same to the last bit on any CPU and BLAS (the kernels then differ between CPUs, not between
    batches).
    """
    out = np.empty((x.shape[0], w.shape[1]), dtype=np.float32)
    for start in range(0, x.shape[0], rows):
        np.matmul(x[start : start + rows], w, out=out[start : start + rows])
    out += b
    return out


def load_encoder(model_dir: Path) -> BertEncoder:
    """The encoder of a model folder (`config.json` + `model.safetensors`), weights loaded with NumPy."""
    from safetensors.numpy import load_file

    config = BertConfig.from_file(model_dir / "config.json")
    return BertEncoder(config, load_file(str(model_dir / "model.safetensors")))
