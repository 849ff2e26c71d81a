#!/usr/bin/env bash
# A replicated PostgreSQL on loopback for tests and the chaos benchmark: Debian's
# pg_auto_failover (`postgresql-15-auto-failover`), a monitor and two data nodes with
# synchronous replication, each with its own port and directory under DIR.
#
#   scripts/failover-cluster.sh up DIR PORT [OWNER]
#                                              monitor on PORT, nodes on PORT+1 and PORT+2;
#                                              returns once one node is primary and the other
#                                              a synchronous secondary (database `onceform`,
#                                              user `postgres`, trust auth on 127.0.0.1).
#                                              With OWNER (a pid), the cluster is torn down
#                                              when that process is gone, however it ended
#   scripts/failover-cluster.sh down DIR       stops every process of the cluster, removes DIR
#   scripts/failover-cluster.sh kill DIR N     SIGKILL node N (1 or 2): its keeper and Postgres
#   scripts/failover-cluster.sh start DIR N    starts node N's keeper again (it rejoins)
#   scripts/failover-cluster.sh stop-monitor DIR   stops the monitor (no failover any more)
#   scripts/failover-cluster.sh primary DIR    prints the port of the node that is primary
#   scripts/failover-cluster.sh wait DIR [S]   waits up to S seconds (60) for primary+secondary
#   scripts/failover-cluster.sh state DIR      the monitor's view (`pg_autoctl show state`)
#
# Why pg_auto_failover and not Patroni: one Debian package, no consensus store to run beside
# it (Patroni needs etcd, a third service), and its keeper runs in the foreground per node, so
# a test can kill and restart a node as a plain process.
#
# Postgres refuses to run as root: as root, every process runs as `postgres` (runuser). The
# monitor's timings are shortened (MONITOR_SETTINGS below) so a failover takes seconds, not
# the defaults' ~30 s; docs/RUNBOOK.md explains each.
set -euo pipefail

PGBIN=${PGBIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)}
MONITOR_SETTINGS="
pgautofailover.health_check_period = 1000
pgautofailover.health_check_timeout = 1000
pgautofailover.health_check_max_retries = 1
pgautofailover.health_check_retry_delay = 500
pgautofailover.node_considered_unhealthy_timeout = 2000
pgautofailover.primary_demote_timeout = 5000
pgautofailover.startup_grace_period = 2000
"

die() { echo "failover-cluster: $*" >&2; exit 1; }
[ -x "$PGBIN/pg_ctl" ] || die "no PostgreSQL binaries (apt-get install postgresql-15)"
command -v pg_autoctl >/dev/null || die "pg_autoctl missing (apt-get install postgresql-15-auto-failover)"

cmd=${1:-}; dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || die "usage: $0 up|down|kill|start|stop-monitor|primary|wait|state DIR [ARG]"

# The cluster's user and environment (its own XDG directories, so pg_autoctl's configuration
# and state files of several clusters never meet), as a command prefix.
pg_env() {
  PG=(env "PATH=$PGBIN:$PATH" "XDG_CONFIG_HOME=$dir/xdg/config" "XDG_DATA_HOME=$dir/xdg/data"
    "XDG_RUNTIME_DIR=$dir/xdg/run")
  if [ "$(id -u)" -eq 0 ]; then PG=(runuser -u postgres -- "${PG[@]}"); fi
}
as_pg() { pg_env; "${PG[@]}" "$@"; }

port_of() { cat "$dir/port"; }
monitor_url() { echo "postgres://autoctl_node@127.0.0.1:$(port_of)/pg_auto_failover?sslmode=disable"; }

# Starts a keeper (`pg_autoctl run` or `create … --run`) in the background, its own process
# group, output in DIR/NAME.log and its pid in DIR/NAME.pid.
spawn() {
  local name=$1; shift
  setsid bash -c 'echo $$ > "$0"; exec "$@"' "$dir/$name.pid" "$@" >>"$dir/$name.log" 2>&1 < /dev/null &
  for _ in $(seq 1 50); do [ -s "$dir/$name.pid" ] && return 0; sleep 0.1; done
  die "$name did not start"
}

sql_monitor() { "$PGBIN/psql" -X -q -At -h 127.0.0.1 -p "$(port_of)" -U autoctl_node -d pg_auto_failover -c "$1"; }

states() { sql_monitor "SELECT nodeport, reportedstate, goalstate FROM pgautofailover.node ORDER BY nodeport" 2>/dev/null || true; }

# A standby (re)joining takes a base backup, which waits for a checkpoint on the primary; a
# spread one takes minutes on an idle server. An immediate CHECKPOINT finishes it now.
nudge() {
  local p
  for p in $(states | awk -F'|' '$2 ~ /primary|single/ { print $1 }'); do
    "$PGBIN/psql" -X -q -h 127.0.0.1 -p "$p" -U postgres -d postgres -c CHECKPOINT >/dev/null 2>&1 &
  done
}

wait_healthy() {
  local limit=${1:-60} s
  for _ in $(seq 1 $((limit * 5))); do
    s=$(states | tr '\n' ' ')
    if [[ "$s" == *"|primary|primary"* && "$s" == *"|secondary|secondary"* ]]; then return 0; fi
    nudge
    sleep 0.2
  done
  echo "$s" >&2
  return 1
}

kill_group() {
  local f=$dir/$1.pid pid
  [ -s "$f" ] || return 0
  pid=$(cat "$f")
  kill -KILL -- "-$pid" 2>/dev/null || true
  rm -f "$f"
}

# The node's Postgres may outlive its keeper's process group (postmaster detaches): kill it too.
kill_postgres() {
  local pidfile=$dir/$1/postmaster.pid pid
  [ -s "$pidfile" ] || return 0
  pid=$(head -n1 "$pidfile")
  [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null || true
  # Gone, or a zombie nobody reaps (a container's init): either way it holds no port.
  for _ in $(seq 1 50); do
    [ -r "/proc/$pid/stat" ] && [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" != Z ] || break
    sleep 0.1
  done
}

case "$cmd" in
  up)
    port=${3:?port}
    mkdir -p "$dir/xdg/config" "$dir/xdg/data" "$dir/xdg/run"
    chmod 700 "$dir/xdg/run"
    echo "$port" > "$dir/port"
    [ "$(id -u)" -eq 0 ] && chown -R postgres: "$dir"
    as_pg pg_autoctl create monitor --pgdata "$dir/monitor" --pgport "$port" --hostname 127.0.0.1 \
      --auth trust --no-ssl >>"$dir/monitor.log" 2>&1
    printf '%s\n' "$MONITOR_SETTINGS" | as_pg tee -a "$dir/monitor/postgresql.conf" >/dev/null
    pg_env; spawn monitor "${PG[@]}" pg_autoctl run --pgdata "$dir/monitor"
    for _ in $(seq 1 100); do sql_monitor "SELECT 1" >/dev/null 2>&1 && break; sleep 0.2; done
    for n in 1 2; do
      pg_env; spawn "node$n" "${PG[@]}" pg_autoctl create postgres --pgdata "$dir/node$n" --pgport $((port + n)) \
        --hostname 127.0.0.1 --name "node$n" --dbname onceform --username postgres --auth trust \
        --no-ssl --monitor "$(monitor_url)" --pg-hba-lan --run
      # The second node clones the first: start it once the first is primary.
      if [ "$n" -eq 1 ]; then
        for _ in $(seq 1 300); do [[ "$(states)" == *"|single|single"* ]] && break; sleep 0.2; done
        "$PGBIN/psql" -X -q -h 127.0.0.1 -p $((port + 1)) -U postgres -d postgres -c CHECKPOINT >/dev/null 2>&1 || true
      fi
    done
    if [ -n "${4:-}" ]; then
      setsid bash -c 'while kill -0 "$1" 2>/dev/null && [ -d "$2" ]; do sleep 1; done; exec bash "$0" down "$2"' \
        "$0" "$4" "$dir" >/dev/null 2>&1 < /dev/null &
    fi
    wait_healthy 90 || die "the cluster did not become healthy (logs in $dir)"
    # Tests connect as postgres over TCP without a password.
    for n in 1 2; do
      "$PGBIN/psql" -X -q -h 127.0.0.1 -p $((port + n)) -U postgres -d onceform -c 'SELECT 1' >/dev/null 2>&1 ||
        die "node$n does not take trusted TCP connections"
    done
    ;;
  down)
    [ -d "$dir" ] || exit 0
    for name in node1 node2 monitor; do kill_group "$name"; kill_postgres "$name"; done
    rm -rf "$dir"
    ;;
  kill)
    n=${3:?node}
    kill_group "node$n"
    kill_postgres "node$n"
    ;;
  start)
    n=${3:?node}
    pg_env; spawn "node$n" "${PG[@]}" pg_autoctl run --pgdata "$dir/node$n"
    ;;
  stop-monitor)
    kill_group monitor
    kill_postgres monitor
    ;;
  primary)
    states | awk -F'|' '$2 == "primary" && $3 == "primary" { print $1 }'
    ;;
  wait)
    wait_healthy "${3:-60}" || die "not healthy"
    ;;
  state)
    as_pg pg_autoctl show state --pgdata "$dir/monitor"
    ;;
  *) die "unknown command $cmd" ;;
esac
