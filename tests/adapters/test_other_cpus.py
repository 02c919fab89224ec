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

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.adapters.test_local_embedder import cosines, reference
from tests.adapters.test_onnx_embedder import INT8_MIN_COSINE

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
# Only a hang fails on time: the NumPy checks took ~5 min a kernel set at load 10–14 here, QEMU's up to 282 s.
SUBPROCESS_TIMEOUT_S = 1800


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


# ------------------------------------------------------------------ onnxruntime on an emulated Haswell

QEMU = shutil.which("qemu-x86_64")
QEMU_CPU = "Haswell"  # AVX2 + FMA, no AVX-512 or VNNI: onnxruntime's u8×s8 kernels use vpmaddubsw there
PROBE = Path(__file__).resolve().parent / "other_cpu_probe.py"
# Python and onnxruntime run very slowly under QEMU (all 52 reference texts took 23.5 min at load 12), so only
# the short reference texts (≤ 60 characters, 18 of the 52) are embedded there: 134 s for int8 and 282 s for
# the fp32 check at load 12–14 (measured here, mostly imports and session start).
SHORT_TEXT_CHARS = 60
# int8 is one model whatever the CPU: the same graph on an emulated Haswell and natively (AVX-512 VNNI)
# gives each short reference text a vector within this cosine (measured: 1.000000 to six decimals with 7-bit
# weights; with 8-bit weights the Haswell kernels saturated and the worst text, "a", fell to 0.989211).
SAME_INT8_MODEL_COSINE = 0.9999
# Short passages for onnxruntime's batch invariance under QEMU: the first three pad to 16 word pieces, the
# last two to 8.
SHORT_PASSAGES = [
    "Rate limiter caps how many calls each client may send per minute",
    "The checkRateLimit function validates request frequency",
    "A login limiter locks an account after five failures",
    "Vitamin D deficiency and respiratory infection",
    "short",
]


def need_qemu() -> str:
    if QEMU is None:
        if os.environ.get("QUARRY_REQUIRE_QEMU") == "1":
            pytest.fail("QUARRY_REQUIRE_QEMU=1 but qemu-x86_64 is not installed (apt-get install qemu-user)")
        pytest.skip("qemu-x86_64 is not installed (apt-get install qemu-user): no emulated AVX2 CPU")
    return QEMU


def probe(runtime: str, calls: list[list[str]], emulate: bool) -> list[list[np.ndarray]]:
    """Each call's vectors from a fresh process, natively or on the emulated CPU (the graph is built natively
    first, into the user cache the child reads)."""
    from infra.config.runtime_environment import default_onnx_cache_dir
    from infra.local.onnx.embedder import LocalEmbedder

    LocalEmbedder(runtime=runtime).warm()  # type: ignore[arg-type]
    command = [sys.executable, str(PROBE), runtime, str(default_onnx_cache_dir())]
    if emulate:
        command = [need_qemu(), "-cpu", QEMU_CPU, *command]
    done = subprocess.run(
        command,
        input=json.dumps(calls),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT_S,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return [[np.asarray(v, dtype=np.float32) for v in call] for call in json.loads(done.stdout)]


def test_int8_is_the_same_model_on_an_avx2_cpu() -> None:
    pytest.importorskip("onnxruntime")
    need_qemu()
    rows = [r for r in reference() if len(r["text"]) <= SHORT_TEXT_CHARS]
    texts = [r["text"] for r in rows]
    [emulated] = probe("onnx-int8", [texts], emulate=True)
    [native] = probe("onnx-int8", [texts], emulate=False)
    same = np.einsum("ij,ij->i", np.asarray(emulated, np.float64), np.asarray(native, np.float64))
    worst = int(np.argmin(same))
    print(f"int8 on {QEMU_CPU} vs natively: worst cosine {same[worst]:.6f} ({texts[worst]!r})")
    assert same.min() >= SAME_INT8_MODEL_COSINE, f"{texts[worst]!r}: cosine {same[worst]:.6f}"
    assert cosines(emulated, rows).min() >= INT8_MIN_COSINE


def test_onnx_gives_a_passage_the_same_vector_whatever_is_beside_it_on_an_avx2_cpu() -> None:
    pytest.importorskip("onnxruntime")
    need_qemu()
    n = len(SHORT_PASSAGES)
    # all together, each alone, and two of the three that share a padded length in the other order
    calls = [SHORT_PASSAGES, *([t] for t in SHORT_PASSAGES), [SHORT_PASSAGES[2], SHORT_PASSAGES[1]]]
    together, *alone, mixed = probe("onnx", calls, emulate=True)
    for i in range(n):
        np.testing.assert_array_equal(alone[i][0], together[i])
    np.testing.assert_array_equal(mixed[1], together[1])
    np.testing.assert_array_equal(mixed[0], together[2])
