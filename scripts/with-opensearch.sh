#!/usr/bin/env bash
# Run a command with a local OpenSearch node and a three-node cluster: `scripts/with-opensearch.sh CMD ARGS...`.
#
# Starts the node (scripts/opensearch.sh up) unless QUARRY_OPENSEARCH_URL already names one, and the
# cluster (scripts/opensearch.sh cluster-up, at the same time) unless QUARRY_OPENSEARCH_CLUSTER_URL already
# names one; exports both URLs for CMD, and stops afterwards — also when CMD fails — what this script
# started. Exits with CMD's exit code. Without java or mvn nothing is started and the live tests skip (or
# fail, when QUARRY_REQUIRE_OPENSEARCH=1, as in .ci/run).
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
started=""
cluster_started=""
logs="$(mktemp -d)"

if ! command -v java >/dev/null || ! command -v mvn >/dev/null; then
  echo "with-opensearch: java or mvn missing: no OpenSearch node, the live tests will skip" >&2
else
  "$HERE/opensearch.sh" install >&2 || true  # once, before the two starts share it
  node_pid="" cluster_pid=""
  if [[ -z "${QUARRY_OPENSEARCH_URL:-}" ]]; then
    if url="$("$HERE/opensearch.sh" url 2>/dev/null)"; then
      export QUARRY_OPENSEARCH_URL="$url"  # already running (make opensearch-up): leave it running
    else
      "$HERE/opensearch.sh" up >"$logs/node" & node_pid=$!
    fi
  fi
  if [[ -z "${QUARRY_OPENSEARCH_CLUSTER_URL:-}" ]]; then
    if url="$("$HERE/opensearch.sh" cluster-url 2>/dev/null)"; then
      export QUARRY_OPENSEARCH_CLUSTER_URL="$url"  # make opensearch-cluster-up: left running
    else
      "$HERE/opensearch.sh" cluster-up >"$logs/cluster" & cluster_pid=$!
    fi
  fi
  if [[ -n "$node_pid" ]]; then
    if wait "$node_pid"; then
      export QUARRY_OPENSEARCH_URL="$(tail -n 1 "$logs/node")"
      started=1
    else
      echo "with-opensearch: the node did not start: the live tests will skip" >&2
    fi
  fi
  if [[ -n "$cluster_pid" ]]; then
    if wait "$cluster_pid"; then
      export QUARRY_OPENSEARCH_CLUSTER_URL="$(tail -n 1 "$logs/cluster")"
      cluster_started=1
    else
      echo "with-opensearch: the cluster did not start: the cluster tests will skip" >&2
    fi
  fi
fi
rm -rf "$logs"

stop() {
  [[ -n "$started" ]] && "$HERE/opensearch.sh" down
  [[ -n "$cluster_started" ]] && "$HERE/opensearch.sh" cluster-down
}
trap 'stop; exit 130' INT TERM
"$@"
status=$?
stop
exit $status
