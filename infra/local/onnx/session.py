"""The ONNX runtimes of the local embedder: where the graph comes from, and the onnxruntime session.

A graph is looked for first inside the model folder (`onnx/quarry-<variant>-<pooling>.onnx`, shipped
prebuilt by the Lambda layer so Lambda never builds one), then in the cache folder
(`QUARRY_EMBEDDER_CACHE_DIR`, default `~/.cache/quarry/onnx`), under a name keyed by the graph version,
variant, pooling, the weights file's path, size and mtime and `config.json`'s bytes: changed weights get a
new graph, and only the first load of a model pays the build (a few seconds). Builds are atomic (temporary
file + rename) and serialised between processes by a lock file; a cached graph that onnxruntime cannot
open is rebuilt, not fatal.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from infra.local.onnx.encoder_graph import GRAPH_VERSION, Pooling, Variant, prebuilt_name, write_graph
from infra.local.onnx.runtimes import Runtime, onnxruntime_installed

log = logging.getLogger(__name__)
VARIANTS: dict[str, Variant] = {"onnx": "fp32", "onnx-int8": "int8"}


def cached_graph_path(model_dir: Path, pooling: Pooling, variant: Variant, cache_dir: Path) -> Path:
    """Where the cache keeps this model's graph: the name changes whenever the weights or config do."""
    weights = (model_dir / "model.safetensors").resolve()
    stat = weights.stat()
    key = hashlib.sha256(
        f"{GRAPH_VERSION}|{variant}|{pooling}|{weights}|{stat.st_size}|{stat.st_mtime_ns}|".encode()
        + (model_dir / "config.json").read_bytes()
    ).hexdigest()[:16]
    return cache_dir / f"{_graph_prefix(model_dir, pooling, variant)}{key}.onnx"


def _graph_prefix(model_dir: Path, pooling: Pooling, variant: Variant) -> str:
    """The part of a cached graph's name that names the folder (by path) and the variant, not the state."""
    folder = model_dir.resolve()
    where = hashlib.sha256(str(folder).encode()).hexdigest()[:8]
    return f"{folder.name}-{where}-{variant}-{pooling}-"


def _prune_stale(model_dir: Path, pooling: Pooling, variant: Variant, keep: Path) -> None:
    """Remove the graphs this folder's earlier weights, config or graph versions left in the cache (90 MB
    each for MiniLM): a reinstalled or upgraded model otherwise leaves one more behind every time."""
    for stale in keep.parent.glob(f"{_graph_prefix(model_dir, pooling, variant)}*.onnx"):
        if stale != keep:
            stale.unlink(missing_ok=True)
            stale.with_suffix(".lock").unlink(missing_ok=True)


class OnnxEncoder:
    """Token ids + 0/1 mask → unit-length pooled vectors, by one onnxruntime session (thread-safe)."""

    def __init__(self, path: Path, threads: int) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        # No busy-waiting after a call: onnxruntime's workers otherwise spin for a while and starve the
        # index work that follows an embedding (the k-NN matvec, FTS5) on a 2-core machine.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3  # errors only: the optimiser's notes are not the user's business
        self.path = path
        self._session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        version = self._session.get_modelmeta().custom_metadata_map.get("quarry_graph_version")
        if version != GRAPH_VERSION:
            raise ValueError(f"{path}: graph version {version!r}, this code builds {GRAPH_VERSION!r}")

    def __call__(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        feed = {"input_ids": ids.astype(np.int64, copy=False), "attention_mask": mask.astype(np.float32)}
        result: Any = self._session.run(["embeddings"], feed)[0]
        return np.asarray(result, dtype=np.float32)


def open_encoder(
    model_dir: Path, pooling: Pooling, runtime: Runtime, threads: int, cache_dir: Path
) -> OnnxEncoder:
    """The session for `runtime`, building (once) the graph it needs. Raises ModuleNotFoundError naming
    a missing package, OSError/ValueError for files that cannot be read or built."""
    if not onnxruntime_installed():
        raise ModuleNotFoundError(f"QUARRY_EMBEDDER_RUNTIME={runtime} needs the onnxruntime package")
    variant = VARIANTS[runtime]
    prebuilt = model_dir / "onnx" / prebuilt_name(variant, pooling)
    if prebuilt.exists():
        try:
            return OnnxEncoder(prebuilt, threads)
        except Exception as exc:  # a stale or damaged prebuilt graph: build one in the cache instead
            log.warning("ignoring the prebuilt graph %s: %s", prebuilt, exc)
    target = cached_graph_path(model_dir, pooling, variant, cache_dir)
    with _build_lock(target):
        if target.exists():
            try:
                return OnnxEncoder(target, threads)
            except Exception as exc:
                log.warning("rebuilding the cached graph %s: %s", target, exc)
        log.info("building the %s graph of %s into %s", variant, model_dir, target)
        write_graph(model_dir, pooling, variant, target)
        _prune_stale(model_dir, pooling, variant, keep=target)
        return OnnxEncoder(target, threads)


@contextmanager
def _build_lock(target: Path) -> Iterator[None]:
    """An exclusive lock on `<target>.lock`: a second process waits for the first one's build, then
    finds the graph in place instead of building it again."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.with_suffix(".lock"), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
