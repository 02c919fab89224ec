#!/usr/bin/env bash
# Run a command with a local OpenSearch node: `scripts/with-opensearch.sh CMD ARGS...`.
#
# Starts the node (scripts/opensearch.sh up) unless QUARRY_OPENSEARCH_URL already names a cluster,
# exports QUARRY_OPENSEARCH_URL for CMD, and stops the node afterwards — also when CMD fails — if this
# script started it. Exits with CMD's exit code. Without java or mvn the node is not started and the live
# tests skip (or fail, when QUARRY_REQUIRE_OPENSEARCH=1, as in .ci/run).
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
started=""

if [[ -z "${QUARRY_OPENSEARCH_URL:-}" ]]; then
  if ! command -v java >/dev/null || ! command -v mvn >/dev/null; then
    echo "with-opensearch: java or mvn missing: no OpenSearch node, the live tests will skip" >&2
  elif url="$("$HERE/opensearch.sh" url 2>/dev/null)"; then
    export QUARRY_OPENSEARCH_URL="$url"  # already running (make opensearch-up): leave it running
  elif url="$("$HERE/opensearch.sh" up)"; then
    export QUARRY_OPENSEARCH_URL="$url"
    started=1
  else
    echo "with-opensearch: the node did not start: the live tests will skip" >&2
  fi
fi

stop() { [[ -n "$started" ]] && "$HERE/opensearch.sh" down; }
trap 'stop; exit 130' INT TERM
"$@"
status=$?
stop
exit $status
