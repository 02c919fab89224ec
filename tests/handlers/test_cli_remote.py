"""The CLI beside a running `quarry serve` (handlers/cli/remote_commands.py): `quarry search` and `quarry embed` send
their request to the server over the same data directory, whose model is loaded, and say so when they
have to load it themselves; `quarry demo` loads the demo corpus into it; `--log-level info` shows each
search's log line; the server's URL file lives as long as the server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from handlers.cli.remote_commands import demo_items, url_path
from tests.conftest import ROOT
from tests.handlers.serving import free_port

START_TIMEOUT_SECONDS = 60


def quarry(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("QUARRY_", "POWERTOOLS_"))}
    return subprocess.run(
        [sys.executable, "-m", "handlers.cli.main", "--data-dir", str(data), *args],
        cwd=ROOT,
        env={**env, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def wait_for(path: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.1)


def test_without_a_server_the_cli_says_it_loads_the_model_itself(tmp_path: Path) -> None:
    done = quarry(tmp_path / "data", "embed", "--kind", "passage", "keys rotate monthly")
    assert done.returncode == 0, done.stderr
    assert "no server is running over" in done.stderr and "loading the model in this process" in done.stderr
    (vector,) = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(vector) == 384


@pytest.mark.slow
@pytest.mark.embedder
def test_search_embed_and_demo_go_through_the_running_server(tmp_path: Path) -> None:
    data, log = tmp_path / "data", tmp_path / "server.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("QUARRY_", "POWERTOOLS_"))}
    serve = ["serve", "--workers", "1", "--port", str(free_port()), "--log-level", "info"]
    with log.open("w") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "handlers.cli.main", "--data-dir", str(data), *serve],
            cwd=ROOT,
            env={**env, "PYTHONPATH": str(ROOT)},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_for(url_path(data))
        url = url_path(data).read_text().strip()
        loaded = quarry(data, "demo")
        assert loaded.returncode == 0, loaded.stderr
        report = json.loads(loaded.stdout)
        assert report["loaded_into"] == url and report["indexed"] == len(demo_items()) > 30
        found = quarry(data, "search", "login lockout after a password reset", "--json")
        assert found.returncode == 0 and "loading the model" not in found.stderr, found.stderr
        assert json.loads(found.stdout)["results"][0]["entity_id"] == "t-login-lockout"
        vectors = quarry(data, "embed", "one", "two")
        assert [len(json.loads(line)) for line in vectors.stdout.splitlines()] == [384, 384], vectors.stderr
        assert "loading the model" not in vectors.stderr
        searches = [json.loads(line) for line in log.read_text().splitlines() if '"message":"search"' in line]
        assert searches and {"vector_results", "bm25_results", "alpha"} <= set(searches[-1]), log.read_text()
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert not url_path(data).exists()  # a stopped server leaves no address behind
