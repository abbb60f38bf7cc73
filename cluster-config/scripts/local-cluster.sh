#!/usr/bin/env bash
# Starts and stops a graphlane cluster of N node JVMs on this host (the local profile).
#
#   local-cluster.sh start N [node options]   start the nodes whose pid file names no live process, then wait
#                                             until N members are Up and the serving node is ready
#   local-cluster.sh stop                     stop every node by its pid file
#
# Node R listens on Artery 127.0.0.1:2551+R and Management 127.0.0.1:8558+R; the serving node (rank 0 unless
# told otherwise) on HTTP 8000. Logs and node-R.pid files live in the run directory, printed on start;
# GRAPHLANE_RUN_DIR overrides it. GRAPHLANE_JAR overrides the jar (default cli/target/graphlane.jar under the
# repository), GRAPHLANE_START_TIMEOUT the seconds to wait (default 120), JAVA the java command.
set -euo pipefail

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_dir="$(cd "$script_dir/../.." && pwd)"
run_dir="${GRAPHLANE_RUN_DIR:-${TMPDIR:-/tmp}/graphlane-local-cluster}"
jar="${GRAPHLANE_JAR:-$repo_dir/cli/target/graphlane.jar}"
java_cmd="${JAVA:-java}"
timeout_s="${GRAPHLANE_START_TIMEOUT:-120}"
management_base=8558

usage() {
  echo "usage: $0 start N [node options] | stop" >&2
  exit 2
}

alive() { # pid file -> 0 if it names a live process (a zombie, killed but not yet reaped, is not alive)
  [[ -f "$1" ]] || return 1
  local pid state
  pid="$(cat "$1")"
  kill -0 "$pid" 2>/dev/null || return 1
  state="$(ps -o stat= -p "$pid" 2>/dev/null || true)"
  [[ -n "$state" && "$state" != Z* ]]
}

http_status=000
http_body=""
fetch() { # url -> sets http_status and http_body (000 when nothing answers)
  local out
  out="$(curl -s -m 2 -w '\n%{http_code}' "$1" 2>/dev/null)" || out=$'\n000'
  http_status="${out##*$'\n'}"
  http_body="${out%$'\n'*}"
}

members_up() { # sets up: the members Up as node 0's management sees them, 0 while any is unreachable
  fetch "http://127.0.0.1:$management_base/cluster/members"
  [[ "$http_status" == 200 ]] || { up=0; return; }
  # A member still listed as unreachable (a killed node's old incarnation) does not count: wait until it is gone.
  if ! grep -q '"unreachable" *: *\[\]' <<<"$http_body"; then up=0; return; fi
  up="$(grep -o '"status" *: *"Up"' <<<"$http_body" | wc -l | tr -d ' ' || true)"
}

fail_with_logs() {
  echo "local-cluster: $1" >&2
  for log in "$run_dir"/node-*.log; do
    [[ -f "$log" ]] || continue
    echo "---- last lines of $log" >&2
    tail -n 20 "$log" >&2
  done
  exit 1
}

start() {
  [[ $# -ge 1 && "$1" =~ ^[1-9][0-9]*$ ]] || usage
  local n="$1"; shift
  [[ -f "$jar" ]] || { echo "local-cluster: $jar not found; build it with: mvn -B -pl cli -am package -DskipTests" >&2; exit 2; }
  mkdir -p "$run_dir"
  echo "local-cluster: run directory $run_dir"
  local serving_rank=0 args=("$@") i
  for ((i = 0; i < ${#args[@]}; i++)); do
    if [[ "${args[$i]}" == "--serve" ]]; then serving_rank=-1; fi
  done
  for ((r = 0; r < n; r++)); do
    local pid_file="$run_dir/node-$r.pid"
    if alive "$pid_file"; then
      echo "local-cluster: node $r already running (pid $(cat "$pid_file"))"
      continue
    fi
    nohup "$java_cmd" ${GRAPHLANE_JAVA_OPTS:-} -jar "$jar" node --profile local --rank "$r" --nodes "$n" "$@" \
      >"$run_dir/node-$r.log" 2>&1 </dev/null &
    echo $! >"$pid_file"
    echo "local-cluster: started node $r (pid $!, log $run_dir/node-$r.log)"
  done

  local deadline=$((SECONDS + timeout_s)) up=0
  while ((SECONDS < deadline)); do
    for ((r = 0; r < n; r++)); do
      alive "$run_dir/node-$r.pid" || fail_with_logs "node $r (pid $(cat "$run_dir/node-$r.pid")) exited"
    done
    members_up
    if ((up >= n)); then
      local ready=1
      for ((r = 0; r < n; r++)); do
        if [[ $serving_rank -lt 0 || $r -eq $serving_rank ]]; then
          fetch "http://127.0.0.1:$((management_base + r))/ready"
          [[ "$http_status" == 200 ]] || ready=0
        fi
      done
      if ((ready)); then
        echo "local-cluster: $n members Up, serving node ready (http://127.0.0.1:$management_base/cluster/members)"
        return 0
      fi
    fi
    sleep 1
  done
  fail_with_logs "timed out after ${timeout_s}s: $up of $n members Up or the serving node not ready"
}

stop() {
  [[ -d "$run_dir" ]] || { echo "local-cluster: no run directory $run_dir"; return 0; }
  local pid_file pid stopped=0
  for pid_file in "$run_dir"/node-*.pid; do
    [[ -f "$pid_file" ]] || continue
    pid="$(cat "$pid_file")"
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid"
      for _ in $(seq 1 30); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
      if kill -0 "$pid" 2>/dev/null; then kill -9 "$pid"; fi
      stopped=$((stopped + 1))
    fi
    rm -f "$pid_file"
  done
  echo "local-cluster: stopped $stopped node(s) ($run_dir)"
}

case "${1:-}" in
  start) shift; start "$@" ;;
  stop) shift; stop ;;
  *) usage ;;
esac
