"""One function in the AWS Lambda Runtime Interface Emulator, laid out as Lambda lays it out (what
`sam local invoke` runs in its container, without a container engine).

- The code: the function's artifact, built as `sam build` builds it (the root Makefile's
  `build-<LogicalId>` target, deploy/lambda_artifact.py, requirements-lambda.txt) for this machine's
  platform with the template's Python (3.12), so its bytecode ships as it does from a python3.12 build.
- The runtime: the emulator (`aws-lambda-rie`, the program inside every Lambda base image) starts the
  runtime interface client (`python3.12 -m awslambdaric <Handler>`) from an environment holding only
  that client, as /var/runtime does; the function's packages come from the artifact and the layers.
- The sandbox: a private mount namespace (`unshare --mount`) laid out as a Lambda execution environment:
  the code at /var/task, the runtime at /var/runtime, the layers' folder at /opt (where Lambda extracts
  layers), every mounted filesystem read-only, and /tmp a fresh 512 MB tmpfs (Lambda's default ephemeral
  storage). Root cannot write to a read-only mount either, so a write outside /tmp fails as it does in
  Lambda (EROFS).
- The environment: the template's variables (deploy/lambda_template.py) with the local endpoints
  (deploy/lambda_backends.py), plus the variables Lambda defines for a Python function (AWS Lambda
  Developer Guide, "Defined runtime environment variables").

The emulator prints `START`, `END` and `REPORT RequestId: … Init Duration … Duration …` as Lambda does.
Its Init Duration is only the hand-off of the init request: it starts the runtime lazily, inside the
first invocation, so the handler's import shows in the first Duration. Its memory figures are
placeholders (the configured size, twice).
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deploy.lambda_backends import free_port
from deploy.lambda_builds import RIE, RUNTIME_PYTHON, missing
from deploy.lambda_template import FunctionSpec

EPHEMERAL_MB = 512  # Lambda's default /tmp (template.yaml sets no EphemeralStorage)
START_SECONDS = 10.0  # the emulator listens within milliseconds; this bounds a stuck start
REPORT_SECONDS = 5.0  # the REPORT line follows the answer at once
INVOKE_SLACK_SECONDS = 10.0  # beyond the function's timeout, before the client gives up on the emulator
STOP_SECONDS = 10.0
POLL_SECONDS = 0.02
TIMED_OUT = re.compile(rb"^Task timed out after [\d.]+ seconds")
REPORT = re.compile(
    r"REPORT RequestId: (?P<id>\S+)\s+(?:Init Duration: (?P<init>[\d.]+) ms\s+)?"
    r"Duration: (?P<duration>[\d.]+) ms\s+Billed Duration: (?P<billed>\d+) ms"
)
# Where Lambda puts the code, the runtime and the layers; the sandbox mounts them there.
TASK_ROOT, RUNTIME_DIR, RIE_DIR = "/var/task", "/var/runtime", "/var/rie"
# In the private mount namespace: the code, the runtime environment, the emulator and the layers are bound
# to a staging tmpfs (on /dev/shm: it never holds them) while their folders are still reachable — .cache
# may lie under /var or /tmp, which get replaced — then moved to Lambda's paths in a fresh /var and /opt;
# every mount but the kernel's own (/proc, /sys, /dev) turns read-only; /tmp becomes a fresh tmpfs.
# $1..$4 = the artifact, the runtime environment, the emulator's folder, the layers ("" for none).
SANDBOX = r"""
set -e
mount -t tmpfs -o size=1m tmpfs /dev/shm
for part in task runtime rie opt; do
  mkdir /dev/shm/$part
  [ -n "$1" ] && mount --bind "$1" /dev/shm/$part
  shift
done
mount -t tmpfs -o size=1m,mode=755 tmpfs /var
mkdir /var/task /var/runtime /var/rie
for part in task runtime rie; do mount --move /dev/shm/$part /var/$part; done
if mountpoint -q /dev/shm/opt; then mount --move /dev/shm/opt /opt; fi
for mp in $(awk '{print $5}' /proc/self/mountinfo | sort -u); do
  case "$mp" in /proc|/proc/*|/sys|/sys/*|/dev|/dev/pts|/dev/pts/*|/dev/mqueue) continue ;; esac
  mount -o remount,bind,ro "$mp" 2>/dev/null || true
done
mount -o remount,bind,ro /
mount -t tmpfs -o size="$EPHEMERAL_MB"m,mode=1777 tmpfs /tmp
unset EPHEMERAL_MB
cd /var/task
exec "$@"
"""


@dataclass(frozen=True, slots=True)
class Report:
    """The emulator's REPORT line for one invocation."""

    request_id: str
    duration_ms: float
    billed_ms: int
    init_ms: float | None
    line: str


@dataclass(frozen=True, slots=True)
class Invocation:
    """One answer of the emulator: its HTTP status, the body, the REPORT line, the wall time."""

    status: int
    body: bytes
    report: Report | None
    wall_ms: float

    @property
    def timed_out(self) -> bool:
        """The runtime was stopped at the function's timeout (the emulator answers with this text)."""
        return bool(TIMED_OUT.match(self.body))

    @property
    def init_failed(self) -> bool:
        """The init failed (the import raised): the emulator answers 502 with the runtime's init error."""
        return self.status == 502

    @property
    def payload(self) -> Any:
        return json.loads(self.body)

    @property
    def function_error(self) -> bool:
        """An unhandled error, an init error or a timeout (what Lambda reports as X-Amz-Function-Error)."""
        if self.timed_out or self.init_failed:
            return True
        try:
            body = self.payload
        except ValueError:
            return True
        return isinstance(body, dict) and {"errorType", "errorMessage"} <= body.keys()


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


class EmulatedFunction:
    """One function in its own emulator and sandbox; one invocation at a time, as the emulator runs them."""

    def __init__(
        self,
        spec: FunctionSpec,
        task_root: Path,
        layers: Path | None,
        environment: Mapping[str, str],
        timeout: int | None = None,
    ) -> None:
        self.spec = spec
        self.task_root = task_root
        self.layers = layers
        self.timeout = timeout or spec.timeout
        self.environment = {**spec.environment, **environment}
        self.lines: list[str] = []
        self._seen = threading.Condition()
        self._proc: subprocess.Popen[bytes] | None = None
        self._reader: threading.Thread | None = None
        self.url = ""

    def runtime_environment(self, runtime_api: str) -> dict[str, str]:
        """The variables Lambda defines for a python3.12 function, then the function's own."""
        site = ["/opt/python/lib/python3.12/site-packages", "/opt/python"] if self.layers else []
        return {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "LANG": "en_US.UTF-8",
            "TZ": ":UTC",
            "LAMBDA_TASK_ROOT": TASK_ROOT,
            "LAMBDA_RUNTIME_DIR": RUNTIME_DIR,
            "PYTHONPATH": ":".join([TASK_ROOT, *site]),
            "_HANDLER": self.spec.handler,
            "AWS_EXECUTION_ENV": "AWS_Lambda_python3.12",
            "AWS_LAMBDA_INITIALIZATION_TYPE": "on-demand",
            "AWS_LAMBDA_FUNCTION_NAME": self.spec.name,
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(self.spec.memory),
            "AWS_LAMBDA_FUNCTION_TIMEOUT": str(self.timeout),
            "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
            "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{self.spec.name}",
            "AWS_LAMBDA_LOG_STREAM_NAME": f"local/[$LATEST]{uuid.uuid4().hex}",
            "AWS_LAMBDA_RUNTIME_API": runtime_api,
            "AWS_XRAY_CONTEXT_MISSING": "LOG_ERROR",
            # The emulator hands the runtime no trace id, so the X-Ray SDK (imported by Powertools'
            # tracer, as under Tracing: Active) runs disabled instead of discarding every subsegment.
            "AWS_XRAY_SDK_ENABLED": "false",
            "EPHEMERAL_MB": str(EPHEMERAL_MB),
            **self.environment,
        }

    def start(self) -> EmulatedFunction:
        """Start the emulator (the runtime starts with the first invocation, as the emulator does it)."""
        problems = missing()
        if problems:
            raise RuntimeError("; ".join(problems))
        api, port = f"127.0.0.1:{free_port()}", free_port()
        sandbox = ["unshare", "--mount", "--propagation", "private"]
        if os.geteuid() != 0:  # an unprivileged user maps itself to root of a user namespace to mount
            sandbox[1:1] = ["--user", "--map-root-user"]
        rie = [f"{RIE_DIR}/{RIE.name}", "--log-level", "error", "--runtime-api-address", api]
        rie += ["--runtime-interface-emulator-address", f"127.0.0.1:{port}"]
        mounts = [
            str(self.task_root),
            str(RUNTIME_PYTHON.parent.parent),
            str(RIE.parent),
            str(self.layers or ""),
        ]
        command = [*sandbox, "sh", "-c", SANDBOX, "sandbox", *mounts]
        command += [*rie, f"{RUNTIME_DIR}/bin/python", "-m", "awslambdaric", self.spec.handler]
        self._proc = subprocess.Popen(
            command,
            env=self.runtime_environment(api),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self._reader = threading.Thread(target=self._read, args=(self._proc,), daemon=True)
        self._reader.start()
        self.url = f"http://127.0.0.1:{port}/2015-03-31/functions/function/invocations"
        deadline = time.monotonic() + START_SECONDS
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return self
            except OSError:
                if self._proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"the emulator did not start:\n{self.output()}") from None
                time.sleep(POLL_SECONDS)

    def _read(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            with self._seen:
                self.lines.append(raw.decode(errors="replace").rstrip("\n"))
                self._seen.notify_all()

    def output(self) -> str:
        with self._seen:
            return "\n".join(self.lines)

    def _report(self, request_id: str) -> Report | None:
        deadline = time.monotonic() + REPORT_SECONDS
        with self._seen:
            while True:
                for line in reversed(self.lines):
                    match = REPORT.search(line)
                    if match and match["id"] == request_id:
                        init = match["init"]
                        return Report(
                            request_id,
                            float(match["duration"]),
                            int(match["billed"]),
                            float(init) if init else None,
                            line.strip(),
                        )
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._seen.wait(left)

    def invoke(self, event: Any) -> Invocation:
        """Invoke the function once (synchronously, as `sam local invoke` and an event source do)."""
        if self._proc is None:
            self.start()
        request_id = str(uuid.uuid4())
        data = event if isinstance(event, bytes) else json.dumps(event).encode()
        headers = {"X-Amzn-RequestId": request_id}
        request = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
        started = time.perf_counter()
        try:
            with urllib.request.urlopen(request, timeout=self.timeout + INVOKE_SLACK_SECONDS) as answer:
                status, body = answer.status, answer.read()
        except urllib.error.HTTPError as exc:
            status, body = exc.code, exc.read()
        wall = (time.perf_counter() - started) * 1000
        report = None if status == 502 else self._report(request_id)
        return Invocation(status, body, report, wall)

    def runtime_pid(self) -> int | None:
        """The runtime interface client's process (the emulator's child), while it runs."""
        if self._proc is None:
            return None
        for pid in _children(self._proc.pid):
            try:
                if b"awslambdaric" in Path(f"/proc/{pid}/cmdline").read_bytes():
                    return pid
            except OSError:
                continue
        return None

    def peak_rss_mb(self) -> float | None:
        """The runtime process's peak resident memory (VmHWM): what Lambda's Max Memory Used reports."""
        pid = self.runtime_pid()
        if pid is None:
            return None
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return None

    def stop(self) -> None:
        """Stop the emulator and its runtime (the emulator stops the runtime on SIGTERM)."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=STOP_SECONDS)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        if self._reader is not None:
            self._reader.join(timeout=STOP_SECONDS)  # it ends at the output's end, once the emulator exited
        if proc.stdout is not None:
            proc.stdout.close()

    def __enter__(self) -> EmulatedFunction:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
