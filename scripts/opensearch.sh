#!/usr/bin/env bash
# OpenSearch 2.19 with the k-NN plugin on 127.0.0.1, for the live test suite and local runs: one node, or a
# cluster of three nodes from the same install.
#
#   scripts/opensearch.sh up            install (first time, cached) and start the node; print its URL
#   scripts/opensearch.sh down          stop the node started by `up` (by its PID)
#   scripts/opensearch.sh url           print the URL of the running node (exit 1 if none)
#   scripts/opensearch.sh cluster-up    start three nodes (all cluster-manager-eligible and data); print
#                                       their URLs, comma-separated (what QUARRY_OPENSEARCH_URL takes)
#   scripts/opensearch.sh cluster-down  stop them (by their PIDs)
#   scripts/opensearch.sh cluster-url   print the running cluster's URLs (exit 1 unless all three run)
#   scripts/opensearch.sh node-kill N   SIGKILL cluster node N (1-3): a node lost mid-request, for tests
#   scripts/opensearch.sh node-start N  start cluster node N again (same ports, same data), wait until it
#                                       has rejoined
#
# Everything comes from Maven Central through `mvn dependency:copy` (the integ-test distribution,
# the k-NN plugin zip, and the lang-painless / analysis-common jars rebuilt as modules, which the
# integ-test distribution lacks) and the reindex module (_delete_by_query) with its jars. Cached under
# .cache/opensearch/ (ignored by git).
# The k-NN zip carries no native libraries: every vector field must use `"engine": "lucene"`.
#
# Settings (environment): OPENSEARCH_PORT (default: 9200 if free, else a free port),
# OPENSEARCH_HEAP (default 1g), OPENSEARCH_CACHE (default .cache/opensearch),
# OPENSEARCH_WAIT (seconds to wait for green/yellow, default 300: a busy 2-core machine starting a cluster beside
# the node took over 120), OPENSEARCH_USER (when run as root,
# the system user the node runs as; default quarry-opensearch — OpenSearch refuses to run as root).
# The cluster: OPENSEARCH_CLUSTER_DIR (default .cache/opensearch/cluster: each node's config, data and
# logs), OPENSEARCH_CLUSTER_HEAP (default 512m a node: three nodes beside the test suite and a single node
# fit a 2-core machine shared with other work).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CACHE="${OPENSEARCH_CACHE:-$ROOT/.cache/opensearch}"
OS_VERSION=2.19.1
KNN_VERSION=2.19.1.0
HEAP="${OPENSEARCH_HEAP:-1g}"
WAIT="${OPENSEARCH_WAIT:-300}"
RUN_USER="${OPENSEARCH_USER:-quarry-opensearch}"
DL="$CACHE/downloads"
HOME_DIR="$CACHE/opensearch-$OS_VERSION"
STAMP="$HOME_DIR/.quarry-installed"
RUN="$CACHE/run"
PIDFILE="$RUN/opensearch.pid"
URLFILE="$RUN/url"
LOG="$RUN/console.log"
CLUSTER="${OPENSEARCH_CLUSTER_DIR:-$CACHE/cluster}"
CLUSTER_HEAP="${OPENSEARCH_CLUSTER_HEAP:-512m}"
NODES=(1 2 3)

ARTIFACTS=(
  "org.opensearch.distribution.integ-test-zip:opensearch:$OS_VERSION:zip"
  "org.opensearch.plugin:opensearch-knn:$KNN_VERSION:zip"
  "org.opensearch.plugin:analysis-common:$OS_VERSION:jar"
  "org.opensearch.plugin:lang-painless:$OS_VERSION:jar"
  "org.opensearch.plugin:opensearch-scripting-painless-spi:$OS_VERSION:jar"
  "org.antlr:antlr4-runtime:4.13.1:jar"
  "org.ow2.asm:asm:9.7:jar"
  "org.ow2.asm:asm-util:9.7:jar"
  "org.ow2.asm:asm-tree:9.7:jar"
  "org.ow2.asm:asm-commons:9.7:jar"
  "org.ow2.asm:asm-analysis:9.7:jar"
  # the reindex module (_delete_by_query, which DELETE /tenant uses) and what it loads
  "org.opensearch.plugin:reindex-client:$OS_VERSION:jar"
  "org.opensearch.client:opensearch-rest-client:$OS_VERSION:jar"
  "org.opensearch:opensearch-ssl-config:$OS_VERSION:jar"
  "org.apache.httpcomponents:httpclient:4.5.14:jar"
  "org.apache.httpcomponents:httpcore:4.4.16:jar"
  "org.apache.httpcomponents:httpasyncclient:4.1.5:jar"
  "org.apache.httpcomponents:httpcore-nio:4.4.16:jar"
  "commons-codec:commons-codec:1.16.1:jar"
  "commons-logging:commons-logging:1.2:jar"
)

say() { echo "opensearch: $*" >&2; }
die() { say "$*"; exit 1; }

java_home() {
  if [[ -n "${OPENSEARCH_JAVA_HOME:-}" ]]; then echo "$OPENSEARCH_JAVA_HOME"; return; fi
  if [[ -n "${JAVA_HOME:-}" ]]; then echo "$JAVA_HOME"; return; fi
  command -v java >/dev/null || die "java not found: install a Java 17 JDK (OpenSearch 2.19 needs Java 11–17+)"
  dirname "$(dirname "$(readlink -f "$(command -v java)")")"
}

download() {
  mkdir -p "$DL"
  command -v mvn >/dev/null || die "mvn not found: install Maven (the node's artifacts come from Maven Central)"
  local spec g a v p file
  for spec in "${ARTIFACTS[@]}"; do
    IFS=: read -r g a v p <<<"$spec"
    file="$DL/$a-$v.$p"
    [[ -s "$file" ]] && continue
    say "downloading $spec"
    mvn -q -B org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy \
      -Dartifact="$spec" -DoutputDirectory="$DL" -Dmdep.overWriteIfNewer=true >&2 \
      || die "Maven Central did not serve $spec"
  done
}

descriptor() { # name classname extended-plugins description
  cat <<EOF
description=$4 (rebuilt from its Maven jar by scripts/opensearch.sh)
version=$OS_VERSION
name=$1
classname=$2
java.version=11
opensearch.version=$OS_VERSION
extended.plugins=$3
has.native.controller=false
EOF
}

install_node() {
  [[ -f "$STAMP" && -d "$HOME_DIR/modules/reindex" ]] && return  # (an install from before reindex: redone)
  download
  say "installing OpenSearch $OS_VERSION into $HOME_DIR"
  rm -rf "$HOME_DIR" "$CACHE/unpack"
  mkdir -p "$CACHE/unpack"
  unzip -q "$DL/opensearch-$OS_VERSION.zip" -d "$CACHE/unpack"
  mv "$CACHE/unpack/opensearch-$OS_VERSION" "$HOME_DIR"
  rmdir "$CACHE/unpack"

  local painless="$HOME_DIR/modules/lang-painless" common="$HOME_DIR/modules/analysis-common"
  mkdir -p "$painless" "$common"
  cp "$DL"/lang-painless-$OS_VERSION.jar "$DL"/opensearch-scripting-painless-spi-$OS_VERSION.jar \
    "$DL"/antlr4-runtime-4.13.1.jar "$DL"/asm*-9.7.jar "$painless/"
  descriptor lang-painless org.opensearch.painless.PainlessPlugin "" "Painless scripting" \
    >"$painless/plugin-descriptor.properties"
  cat >"$painless/plugin-security.policy" <<'EOF'
grant {
  permission java.lang.RuntimePermission "createClassLoader";
  permission java.lang.RuntimePermission "getClassLoader";
};
EOF
  cp "$DL/analysis-common-$OS_VERSION.jar" "$common/"
  descriptor analysis-common org.opensearch.analysis.common.CommonAnalysisPlugin lang-painless \
    "Common analysis" >"$common/plugin-descriptor.properties"
  local reindex="$HOME_DIR/modules/reindex"
  mkdir -p "$reindex"
  cp "$DL"/reindex-client-$OS_VERSION.jar "$DL"/opensearch-rest-client-$OS_VERSION.jar \
    "$DL"/opensearch-ssl-config-$OS_VERSION.jar "$DL"/httpclient-4.5.14.jar "$DL"/httpcore-4.4.16.jar \
    "$DL"/httpasyncclient-4.1.5.jar "$DL"/httpcore-nio-4.4.16.jar "$DL"/commons-codec-1.16.1.jar \
    "$DL"/commons-logging-1.2.jar "$reindex/"
  descriptor reindex org.opensearch.index.reindex.ReindexPlugin "" "Reindex and delete by query" \
    >"$reindex/plugin-descriptor.properties"
  cat >"$reindex/plugin-security.policy" <<'EOF'
grant {
  permission java.net.SocketPermission "*", "connect";
};
EOF

  OPENSEARCH_JAVA_HOME="$(java_home)" "$HOME_DIR/bin/opensearch-plugin" install --batch \
    "file://$DL/opensearch-knn-$KNN_VERSION.zip" >"$CACHE/plugin-install.log" 2>&1 \
    || { cat "$CACHE/plugin-install.log" >&2; die "the k-NN plugin did not install"; }
  touch "$STAMP"
}

running_pid() {
  [[ -f "$PIDFILE" ]] || return 1
  local pid
  pid="$(cat "$PIDFILE" 2>/dev/null || true)"
  [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null && { echo "$pid"; return 0; }
  return 1
}

port_free() {
  python3 - "$1" <<'PY'
import socket, sys
s = socket.socket()
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(1)
PY
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

health() { curl -fsS --max-time 2 "$1/_cluster/health${2:-}" 2>/dev/null || true; }

# launch CONF_DIR PIDFILE LOG HEAP FOLDER...: start bin/opensearch daemonized with the config folder
# CONF_DIR; as root, as the system user (OpenSearch refuses root), owning the FOLDERs it writes (it writes
# its keystore into CONF_DIR).
launch() {
  local conf="$1" pidfile="$2" log="$3" heap="$4"
  shift 4
  local env_vars=(OPENSEARCH_JAVA_HOME="$(java_home)" OPENSEARCH_JAVA_OPTS="-Xms$heap -Xmx$heap"
    OPENSEARCH_PATH_CONF="$conf")
  rm -f "$pidfile"
  if [[ "$(id -u)" == 0 ]]; then
    id -u "$RUN_USER" >/dev/null 2>&1 || useradd -r -M -s /usr/sbin/nologin "$RUN_USER"
    chown -R "$RUN_USER" "$HOME_DIR" "$@"
    # The node's user must be able to reach the cache through every parent folder.
    runuser -u "$RUN_USER" -- test -x "$HOME_DIR/bin/opensearch" \
      || die "user $RUN_USER cannot reach $HOME_DIR (set OPENSEARCH_CACHE to a folder it can read)"
    runuser -u "$RUN_USER" -- env "${env_vars[@]}" "$HOME_DIR/bin/opensearch" -d -p "$pidfile" >"$log" 2>&1
  else
    env "${env_vars[@]}" "$HOME_DIR/bin/opensearch" -d -p "$pidfile" >"$log" 2>&1
  fi
}

# stop_pid PID: SIGTERM, wait up to 30 s, then SIGKILL.
stop_pid() {
  local pid="$1"
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 60); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.5
  done
  say "pid $pid did not stop in 30 s: kill -9"
  kill -9 "$pid" 2>/dev/null || true
}

up() {
  local pid
  if pid="$(running_pid)"; then
    cat "$URLFILE"
    return
  fi
  local t0=$SECONDS
  install_node
  local port="${OPENSEARCH_PORT:-}"
  if [[ -z "$port" ]]; then
    if port_free 9200; then port=9200; else port="$(free_port)"; fi
  else
    port_free "$port" || die "port $port on 127.0.0.1 is taken (set OPENSEARCH_PORT to another one)"
  fi
  local transport
  transport="$(free_port)"
  mkdir -p "$CACHE/data" "$CACHE/logs" "$RUN"
  cat >"$HOME_DIR/config/opensearch.yml" <<CONF
cluster.name: quarry-local
node.name: quarry-local-1
network.host: 127.0.0.1
http.port: $port
transport.port: $transport
discovery.type: single-node
path.data: $CACHE/data
path.logs: $CACHE/logs
action.auto_create_index: true
# The request size cap of Amazon OpenSearch Service's small instance types (100 MiB on larger ones),
# so the live tests see the same 413 a production domain can answer.
http.max_content_length: 10mb
CONF
  local url="http://127.0.0.1:$port"
  launch "$HOME_DIR/config" "$PIDFILE" "$LOG" "$HEAP" "$CACHE/data" "$CACHE/logs" "$RUN" \
    || { tail -20 "$LOG" >&2; die "the node did not start (log: $LOG)"; }
  local deadline=$((SECONDS + WAIT)) status=""
  while ((SECONDS < deadline)); do
    status="$(health "$url")"
    if [[ "$status" == *'"status":"green"'* || "$status" == *'"status":"yellow"'* ]]; then
      echo "$url" >"$URLFILE"
      say "up at $url in $((SECONDS - t0)) s (pid $(cat "$PIDFILE"))"
      echo "$url"
      return
    fi
    if [[ -f "$PIDFILE" ]] && ! running_pid >/dev/null; then break; fi
    sleep 1
  done
  tail -30 "$CACHE/logs/quarry-local.log" >&2 2>/dev/null || tail -30 "$LOG" >&2
  down
  die "the node was not green/yellow within ${WAIT}s (logs: $CACHE/logs)"
}

down() {
  local pid
  if ! pid="$(running_pid)"; then
    rm -f "$PIDFILE" "$URLFILE"
    say "not running"
    return
  fi
  stop_pid "$pid"
  rm -f "$PIDFILE" "$URLFILE"
  say "stopped (pid $pid)"
}

# -- the three-node cluster --------------------------------------------------------------------------

node_pid() { # N: the PID of cluster node N, if it runs
  local pidfile="$CLUSTER/run/node$1.pid" pid
  [[ -f "$pidfile" ]] || return 1
  pid="$(cat "$pidfile" 2>/dev/null || true)"
  [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null && { echo "$pid"; return 0; }
  return 1
}

cluster_urls() { # the nodes' URLs, comma-separated (read from their configs)
  local n urls=()
  for n in "${NODES[@]}"; do
    urls+=("http://127.0.0.1:$(sed -n 's/^http.port: //p' "$CLUSTER/node$n/config/opensearch.yml")")
  done
  (IFS=,; echo "${urls[*]}")
}

node_config() { # N HTTP_PORT TRANSPORT_PORT SEED_HOSTS: write node N's config folder
  local n="$1" dir="$CLUSTER/node$1"
  mkdir -p "$dir/config/jvm.options.d" "$dir/data" "$dir/logs"
  cp "$HOME_DIR/config/log4j2.properties" "$dir/config/"
  # The JVM's relative paths (GC log, error file, heap dump) point into this node's own folders.
  sed -e "s#logs/#$dir/logs/#g" -e "s#HeapDumpPath=data#HeapDumpPath=$dir/data#" \
    "$HOME_DIR/config/jvm.options" >"$dir/config/jvm.options"
  cat >"$dir/config/opensearch.yml" <<CONF
cluster.name: quarry-cluster
node.name: quarry-node-$n
node.roles: [cluster_manager, data, ingest]
network.host: 127.0.0.1
http.port: $2
transport.port: $3
discovery.seed_hosts: [$4]
cluster.initial_cluster_manager_nodes: [quarry-node-1, quarry-node-2, quarry-node-3]
path.data: $dir/data
path.logs: $dir/logs
# Three JVMs share this machine's cores: each sizes its thread pools for one.
node.processors: 1
# How full the shared disk is is not this cluster's concern: never refuse to place a shard for it.
cluster.routing.allocation.disk.threshold_enabled: false
http.max_content_length: 10mb
CONF
}

start_node() { # N: launch node N from its config folder
  local n="$1" dir="$CLUSTER/node$1"
  [[ -f "$dir/config/opensearch.yml" ]] || die "node $n has no configuration: run cluster-up first"
  mkdir -p "$CLUSTER/run"
  launch "$dir/config" "$CLUSTER/run/node$n.pid" "$CLUSTER/run/node$n.log" "$CLUSTER_HEAP" \
    "$dir" "$CLUSTER/run" \
    || { tail -20 "$CLUSTER/run/node$n.log" >&2; die "node $n did not start (logs: $dir/logs)"; }
}

wait_pids() { # until every node has written its pidfile (the launcher returns before the JVM does)
  local deadline=$((SECONDS + WAIT)) n missing
  while ((SECONDS < deadline)); do
    missing=0
    for n in "${NODES[@]}"; do node_pid "$n" >/dev/null || missing=$((missing + 1)); done
    ((missing == 0)) && return 0
    sleep 0.5
  done
  say "$missing nodes did not start within ${WAIT}s (logs: $CLUSTER/run, $CLUSTER/node*/logs)"
  return 1
}

wait_health() { # QUERY: poll until a node answers the health QUERY without timing out
  local deadline=$((SECONDS + WAIT)) url
  while ((SECONDS < deadline)); do
    for url in $(cluster_urls | tr , ' '); do
      [[ "$(health "$url" "$1")" == *'"timed_out":false'* ]] && return 0
    done
    sleep 1
  done
  say "the cluster did not answer $1 within ${WAIT}s (logs: $CLUSTER/node*/logs)"
  return 1
}

cluster_up() {
  local n running=0
  for n in "${NODES[@]}"; do node_pid "$n" >/dev/null && running=$((running + 1)); done
  if ((running == ${#NODES[@]})); then cluster_urls; return; fi
  ((running == 0)) || die "$running of ${#NODES[@]} cluster nodes run: node-start the others, or cluster-down"
  local t0=$SECONDS
  install_node
  local http=() transport=() seeds=()
  for n in "${NODES[@]}"; do
    http+=("$(free_port)")
    transport+=("$(free_port)")
    seeds+=("127.0.0.1:${transport[-1]}")
  done
  for n in "${NODES[@]}"; do
    node_config "$n" "${http[n - 1]}" "${transport[n - 1]}" "$(IFS=,; echo "${seeds[*]}")"
  done
  for n in "${NODES[@]}"; do start_node "$n" & done
  wait
  wait_pids || { cluster_down; exit 1; }
  wait_health "?wait_for_nodes=${#NODES[@]}&wait_for_status=green&timeout=1s" || { cluster_down; exit 1; }
  say "cluster up at $(cluster_urls) in $((SECONDS - t0)) s"
  cluster_urls
}

cluster_down() {
  local n pid pids=()
  for n in "${NODES[@]}"; do
    if pid="$(node_pid "$n")"; then pids+=("$pid"); fi
  done
  for pid in "${pids[@]}"; do stop_pid "$pid" & done
  wait
  rm -f "$CLUSTER"/run/node*.pid
  say "cluster stopped (${#pids[@]} nodes)"
}

node_kill() {
  local pid
  pid="$(node_pid "$1")" || die "node $1 is not running"
  kill -9 "$pid"
  while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
  say "node $1 killed (pid $pid)"
}

node_start() {
  node_pid "$1" >/dev/null && return
  start_node "$1"
  wait_health "?wait_for_nodes=${#NODES[@]}&timeout=1s" || exit 1
  say "node $1 rejoined (pid $(node_pid "$1"))"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  url) running_pid >/dev/null && cat "$URLFILE" ;;
  install) install_node ;;
  cluster-up) cluster_up ;;
  cluster-down) cluster_down ;;
  cluster-url) for n in "${NODES[@]}"; do node_pid "$n" >/dev/null || exit 1; done; cluster_urls ;;
  node-kill) node_kill "${2:?node number}" ;;
  node-start) node_start "${2:?node number}" ;;
  *) die "usage: $0 up|down|url|install|cluster-up|cluster-down|cluster-url|node-kill N|node-start N" ;;
esac
