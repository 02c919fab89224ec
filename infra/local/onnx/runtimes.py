"""Which runtime runs the local model, decided without importing NumPy or onnxruntime: `quarry serve` sets
its workers' thread counts from it before either is first imported (handlers/cli/main.py thread_budget)."""

from __future__ import annotations

import importlib.util
from typing import Literal

Runtime = Literal["numpy", "onnx", "onnx-int8"]


def onnxruntime_installed() -> bool:
    """Whether onnxruntime can be imported (checked without importing it: ~100 ms saved at start)."""
    return importlib.util.find_spec("onnxruntime") is not None


def resolved_runtime(configured: Runtime | None) -> Runtime:
    """The configured runtime, or `onnx` when onnxruntime is installed, else `numpy`."""
    if configured is not None:
        return configured
    return "onnx" if onnxruntime_installed() else "numpy"
