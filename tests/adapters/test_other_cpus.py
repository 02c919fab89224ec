"""The local embedder's promises on CPUs other than this one (AVX-512 here; many hosts have AVX2 only).

Batch invariance (a passage's vector the same to the last bit whatever is embedded beside it) and the
reference vectors depend on the BLAS kernels, which differ per CPU. The NumPy runtime is run in a pytest
subprocess under other OpenBLAS kernel sets (`OPENBLAS_CORETYPE`, read when NumPy is imported), with
NumPy's own loops held to the same CPU generation (`NPY_DISABLE_CPU_FEATURES`). The onnxruntime graphs
are run under user-mode QEMU emulating a Haswell (AVX2, FMA, no AVX-512): onnxruntime reads the CPU's
features itself and then takes its AVX2 kernels. Without `qemu-x86_64` those tests skip, unless
QUARRY_REQUIRE_QEMU=1 (CI), where they fail.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.embedder
ROOT = Path(__file__).resolve().parents[2]
# OpenBLAS kernel set → NumPy's CPU features switched off to match it (NumPy 2.x's feature groups:
# X86_V3 is AVX2 + FMA, X86_V4 AVX-512). Haswell's sgemm kernel is the one that broke batch invariance
# (also picked on AMD Zen); Sandybridge (AVX, no FMA) is a second, older family.
CORETYPES = {
    "Haswell": "X86_V4 AVX512_ICL AVX512_SPR",
    "Sandybridge": "X86_V3 X86_V4 AVX512_ICL AVX512_SPR",
}
NUMPY_CHECKS = [
    "tests/adapters/test_local_embedder.py::test_a_passage_gets_the_same_vector_whatever_is_embedded_beside_it[numpy]",
    "tests/adapters/test_local_embedder.py::test_reproduces_every_reference_vector_in_one_batch[numpy]",
    "tests/adapters/test_local_embedder.py::test_reproduces_reference_vectors_one_text_at_a_time[numpy]",
]
SUBPROCESS_TIMEOUT_S = 600  # a hang fails the test; the NumPy checks take ~20 s here


def openblas_core(env: dict[str, str]) -> str:
    """The kernel set OpenBLAS picked in a process with `env` (it falls back silently on unknown names)."""
    code = (
        "import ctypes, glob, os, numpy\n"
        "libs = glob.glob(os.path.join(os.path.dirname(numpy.__file__), '..', 'numpy.libs', '*openblas*'))\n"
        "lib = ctypes.CDLL(libs[0])\n"
        "f = next(getattr(lib, n) for n in ('scipy_openblas_get_corename64_', 'openblas_get_corename')\n"
        "         if hasattr(lib, n))\n"
        "f.restype = ctypes.c_char_p\n"
        "print(f().decode())\n"
    )
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.mark.parametrize("coretype", sorted(CORETYPES))
def test_the_numpy_runtime_keeps_its_promises_on_other_openblas_kernels(coretype: str) -> None:
    env = {
        **os.environ,
        "OPENBLAS_CORETYPE": coretype,
        "NPY_DISABLE_CPU_FEATURES": CORETYPES[coretype],
        "PYTHONPATH": str(ROOT),
    }
    try:
        core = openblas_core(env)
    except (subprocess.CalledProcessError, OSError) as exc:
        pytest.skip(f"cannot ask this NumPy's OpenBLAS which kernels it runs: {exc}")
    assert core == coretype, f"OpenBLAS runs {core} kernels, not {coretype}"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *NUMPY_CHECKS],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT_S,
    )
    assert done.returncode == 0, f"OPENBLAS_CORETYPE={coretype}:\n{done.stdout[-4000:]}{done.stderr[-2000:]}"
