"""schemathesis with every check (`--checks all`: no 5xx, documented statuses, headers and bodies, schema-valid
requests accepted, schema-violating ones refused, stateful links, auth) against the local server, as a user
runs it: the CLI, reading the published /openapi.json and the repository's schemathesis.toml. Bounded
(EXAMPLES per operation, derandomized); the full-size run is in docs/clients.md."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT, FakeEmbedder, make_container
from tests.handlers.serving import serving

KEY = "fuzz-key"
KEYS = {KEY: {"tenant": "fuzz", "scopes": ["read", "write", "admin"]}}
EXAMPLES = (
    5  # per operation in the generating phases (the coverage phase sets its own count): ~4,500 requests
)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from infra.wiring import set_container

    set_container(make_container(Path(tmp_path_factory.mktemp("fuzz")) / "data", FakeEmbedder()))
    with serving(KEYS, 1 << 20) as url:
        yield url
        set_container(None)


@pytest.mark.slow
def test_schemathesis_with_every_check_finds_nothing(live: str) -> None:
    cli = Path(sys.executable).parent / "schemathesis"
    run = subprocess.run(
        [str(cli), "run", f"{live}/openapi.json", "-H", f"Authorization: Bearer {KEY}", "--checks", "all",
         "-n", str(EXAMPLES), "--generation-deterministic", "--no-color",
         "--workers", "1", "--request-timeout", "60", "--max-response-time", "60"],
        cwd=ROOT, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    summary = run.stdout[-3000:]
    assert run.returncode == 0, run.stdout[-20000:] + run.stderr[-2000:]
    assert "Tested: " in summary and " passed" in summary, summary
