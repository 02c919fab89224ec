#!/usr/bin/env bash
# What running the Lambda functions locally needs beyond the project's venv, built once into .cache/lambda/:
#
#   .cache/lambda/go/bin/aws-lambda-rie   the AWS Lambda Runtime Interface Emulator, from the Go module proxy
#   .cache/lambda/python3.12/             Python 3.12 (the template's runtime) with awslambdaric only, as the
#                                         runtime's /var/runtime holds it
#
# Without Go or Python 3.12 (or when a download fails) it says what is missing and exits 0: the emulated-function tests then skip
# naming it (or fail, when QUARRY_REQUIRE_LAMBDA=1, as in .ci/run). Settings: LAMBDA_PYTHON (a python3.12).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CACHE="$ROOT/.cache/lambda"
# The tagged v1.23.0 is not served by the Go module proxy; this pseudo-version (2026-10-30) is.
RIE_MODULE="github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie"
RIE_VERSION="v0.0.0-20261030222936-bef5c4ba774d"
AWSLAMBDARIC="awslambdaric==4.2.2"
RIE="$CACHE/go/bin/aws-lambda-rie"
RUNTIME="$CACHE/python3.12"

say() { echo "lambda-runtime: $*" >&2; }

build_emulator() {
  local stamp="$CACHE/go/.version"
  [[ -x "$RIE" && "$(cat "$stamp" 2>/dev/null)" == "$RIE_VERSION" ]] && return
  if ! command -v go >/dev/null; then
    say "no Go toolchain: the emulated-function tests will skip (install Go 1.22+ from https://go.dev/dl/)"
    return
  fi
  say "building aws-lambda-rie@$RIE_VERSION (about a minute the first time)"
  mkdir -p "$CACHE/go"
  if GOPATH="$CACHE/go" GOCACHE="$CACHE/go/build-cache" GOFLAGS=-modcacherw GOTOOLCHAIN=local \
    go install "$RIE_MODULE@$RIE_VERSION"; then
    echo "$RIE_VERSION" >"$stamp"
  else
    say "building the emulator failed (is the Go module proxy reachable?): the emulated-function tests will skip"
  fi
}

find_python() {
  if [[ -n "${LAMBDA_PYTHON:-}" ]]; then echo "$LAMBDA_PYTHON"; return; fi
  if command -v pyenv >/dev/null && prefix="$(pyenv prefix 3.12 2>/dev/null)"; then
    echo "${prefix%%:*}/bin/python3.12"; return
  fi
  command -v python3.12 || true
}

build_runtime() {
  local stamp="$RUNTIME/.installed"
  [[ -x "$RUNTIME/bin/python" && "$(cat "$stamp" 2>/dev/null)" == "$AWSLAMBDARIC" ]] && return
  local python
  python="$(find_python)"
  if [[ -z "$python" ]] || ! "$python" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null; then
    say "no Python 3.12: the emulated-function tests will skip (pyenv install 3.12, or set LAMBDA_PYTHON)"
    return
  fi
  say "building the python3.12 runtime environment ($AWSLAMBDARIC) with $python"
  rm -rf "$RUNTIME"
  if "$python" -m venv "$RUNTIME" \
    && "$RUNTIME/bin/pip" install --quiet --disable-pip-version-check --only-binary=:all: "$AWSLAMBDARIC"; then
    echo "$AWSLAMBDARIC" >"$stamp"
  else
    rm -rf "$RUNTIME"
    say "installing $AWSLAMBDARIC failed (is the package index reachable?): the emulated-function tests will skip"
  fi
}

build_emulator
build_runtime
