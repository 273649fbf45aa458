#!/usr/bin/env bash
# A production-shaped Balcão on loopback, from Debian's packages and the configuration files in
# deploy/ (docs/deployment.md): PostgreSQL, PgBouncer (transaction pooling), Redis, three
# `balcao serve` instances and HAProxy in front, health-checking /health/ready (TLS terminated there).
# test/topology.test.ts drives traffic through it; an operator can try the procedures by hand.
#
#   scripts/topology.sh up                 start everything (ports from the environment, below)
#   scripts/topology.sh down               stop everything it started (by PID) and delete TOPOLOGY_DIR
#   scripts/topology.sh restart N          the rolling step for instance N: drain it in HAProxy, wait for
#                                          its sessions to end, SIGTERM, start it again, ready, wait until UP
#   scripts/topology.sh roll               `restart` of every instance, one at a time
#   scripts/topology.sh kill N             kill -9 of instance N (nothing else)
#   scripts/topology.sh start N            start instance N and wait until HAProxy sees it UP
#   scripts/topology.sh migrate            `balcao migrate` through PgBouncer while the instances serve
#   scripts/topology.sh admin 'CMD'        one command on HAProxy's runtime API (e.g. 'show stat')
#   scripts/topology.sh env                the topology's addresses, as shell assignments
#
# Environment (`up` records it in $TOPOLOGY_DIR/topology.env for the other commands):
#   TOPOLOGY_DIR       working folder (data, logs, PIDs, rendered configs)  default /tmp/balcao-topology
#   BALCAO_BIN         the balcao command's script                          default this checkout's bin/balcao.js
#   TOPOLOGY_HTTP_PORT, TOPOLOGY_HTTPS_PORT, TOPOLOGY_ADMIN_PORT            HAProxy  (8080, 8443, 8404)
#   TOPOLOGY_PG_PORT, TOPOLOGY_PGBOUNCER_PORT, TOPOLOGY_REDIS_PORT          (55432, 56432, 56379)
#   TOPOLOGY_INSTANCE_PORTS  three ports, space-separated                   ("3001 3002 3003")
#   TOPOLOGY_ENV       extra KEY=VALUE lines appended to every instance's environment file
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DEPLOY="$ROOT/deploy"
TOPOLOGY_DIR=${TOPOLOGY_DIR:-/tmp/balcao-topology}
cmd=${1:-}

if [ "$cmd" != up ] && [ -f "$TOPOLOGY_DIR/topology.env" ]; then
  # shellcheck disable=SC1091
  . "$TOPOLOGY_DIR/topology.env"
fi

BALCAO_BIN=${BALCAO_BIN:-$ROOT/bin/balcao.js}
HTTP_PORT=${TOPOLOGY_HTTP_PORT:-8080}
HTTPS_PORT=${TOPOLOGY_HTTPS_PORT:-8443}
ADMIN_PORT=${TOPOLOGY_ADMIN_PORT:-8404}
PG_PORT=${TOPOLOGY_PG_PORT:-55432}
PGBOUNCER_PORT=${TOPOLOGY_PGBOUNCER_PORT:-56432}
REDIS_PORT=${TOPOLOGY_REDIS_PORT:-56379}
read -r -a INSTANCE_PORTS <<<"${TOPOLOGY_INSTANCE_PORTS:-3001 3002 3003}"
PG_BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
DB=balcao
DIRECT_URL="postgres://postgres@127.0.0.1:$PG_PORT/$DB"
POOLED_URL="postgres://postgres@127.0.0.1:$PGBOUNCER_PORT/$DB"
AS_ROOT=$([ "$(id -u)" = 0 ] && echo 1 || echo "")

say() { echo "topology: $*" >&2; }
as_postgres() { if [ -n "$AS_ROOT" ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

# deploy/<file> with its ${NAME}s replaced by the exported values of the names it uses.
render() {
  local names
  names=$(grep -o '\${[A-Z_0-9]*}' "$1" | sort -u | tr -d '\n')
  envsubst "$names" <"$1"
}

# One command on HAProxy's runtime API (its TCP socket on loopback), the answer on stdout.
admin() {
  exec 3<>"/dev/tcp/127.0.0.1/$ADMIN_PORT"
  printf '%s\n' "$1" >&3
  cat <&3
  exec 3<&-
}

# A field of `show stat` for backend balcao, server sN: scur (current sessions) or status (UP, DOWN, DRAIN…).
server_stat() {
  admin 'show stat' | awk -F, -v s="s$1" -v f="$2" '
    NR == 1 { for (i = 1; i <= NF; i++) if ($i == f || $i == "# " f) col = i; next }
    $1 == "balcao" && $2 == s { print $col }'
}

# Waits (at most $3 tenths of a second) until `server_stat N field` matches the pattern.
wait_stat() {
  local n=$1 field=$2 pattern=$3 tries=${4:-300} value=""
  for ((i = 0; i < tries; i++)); do
    value=$(server_stat "$n" "$field")
    [[ $value =~ $pattern ]] && return 0
    sleep 0.1
  done
  say "s$n: $field is '$value', expected $pattern"
  return 1
}

instance_port() { echo "${INSTANCE_PORTS[$(($1 - 1))]}"; }

# Starts instance N in the background (its own session: the caller's signals don't reach it) and
# waits until its /health/ready answers 200.
start_instance() {
  local n=$1 port
  port=$(instance_port "$n")
  (
    set -a
    # shellcheck disable=SC1090
    . "$TOPOLOGY_DIR/s$n.env"
    set +a
    exec setsid node "$BALCAO_BIN" serve >>"$TOPOLOGY_DIR/s$n.log" 2>&1 </dev/null
  ) &
  echo $! >"$TOPOLOGY_DIR/s$n.pid"
  for ((i = 0; i < 600; i++)); do
    if curl -fsS -o /dev/null "http://127.0.0.1:$port/health/ready" 2>/dev/null; then return 0; fi
    if ! kill -0 "$(cat "$TOPOLOGY_DIR/s$n.pid")" 2>/dev/null; then
      say "instance s$n exited; its log:"
      tail -n 20 "$TOPOLOGY_DIR/s$n.log" >&2
      return 1
    fi
    sleep 0.1
  done
  say "instance s$n not ready on port $port"
  return 1
}

# SIGTERM to instance N, then waits for the process to be gone.
stop_instance() {
  local n=$1 pid
  pid=$(cat "$TOPOLOGY_DIR/s$n.pid" 2>/dev/null || true)
  [ -n "$pid" ] || return 0
  kill -TERM "$pid" 2>/dev/null || true
  while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
  rm -f "$TOPOLOGY_DIR/s$n.pid"
}

up() {
  rm -rf "$TOPOLOGY_DIR"
  mkdir -p "$TOPOLOGY_DIR"
  chmod 755 "$TOPOLOGY_DIR"
  {
    echo "BALCAO_BIN='$BALCAO_BIN'"
    echo "TOPOLOGY_HTTP_PORT=$HTTP_PORT TOPOLOGY_HTTPS_PORT=$HTTPS_PORT TOPOLOGY_ADMIN_PORT=$ADMIN_PORT"
    echo "TOPOLOGY_PG_PORT=$PG_PORT TOPOLOGY_PGBOUNCER_PORT=$PGBOUNCER_PORT TOPOLOGY_REDIS_PORT=$REDIS_PORT"
    echo "TOPOLOGY_INSTANCE_PORTS='${INSTANCE_PORTS[*]}'"
  } >"$TOPOLOGY_DIR/topology.env"
  [ -n "$AS_ROOT" ] && chown postgres "$TOPOLOGY_DIR"

  say "PostgreSQL on $PG_PORT"
  as_postgres "$PG_BIN/initdb" -D "$TOPOLOGY_DIR/pg" -U postgres --auth=trust -E UTF8 --no-sync >/dev/null
  as_postgres "$PG_BIN/pg_ctl" -D "$TOPOLOGY_DIR/pg" -l "$TOPOLOGY_DIR/pg.log" -w \
    -o "-c listen_addresses=127.0.0.1 -c port=$PG_PORT -c unix_socket_directories= -c max_connections=100 -c fsync=off -c wal_level=logical" start >/dev/null
  # Lone statements through PgBouncer carry no timeout of their own (BALCAO_DB_PREPARE=false): the
  # database's settings bound them (docs/decisions.md, docs/deployment.md).
  psql -q -X "postgres://postgres@127.0.0.1:$PG_PORT/postgres" -v ON_ERROR_STOP=1 \
    -c "CREATE DATABASE $DB" \
    -c "ALTER DATABASE $DB SET statement_timeout = '5s'" \
    -c "ALTER DATABASE $DB SET idle_in_transaction_session_timeout = '10s'" >/dev/null

  say "PgBouncer on $PGBOUNCER_PORT (transaction pooling)"
  export PGBOUNCER_DBNAME=$DB PG_HOST=127.0.0.1 PG_PORT PG_DBNAME=$DB PGBOUNCER_PORT PGBOUNCER_DIR="$TOPOLOGY_DIR" \
    PGBOUNCER_AUTH_TYPE=trust PGBOUNCER_POOL_SIZE=${TOPOLOGY_PGBOUNCER_POOL_SIZE:-8}
  render "$DEPLOY/pgbouncer.ini" >"$TOPOLOGY_DIR/pgbouncer.ini"
  echo '"postgres" ""' >"$TOPOLOGY_DIR/userlist.txt"
  if [ -n "$AS_ROOT" ]; then
    chown postgres "$TOPOLOGY_DIR/pgbouncer.ini" "$TOPOLOGY_DIR/userlist.txt"
    pgbouncer -d -u postgres "$TOPOLOGY_DIR/pgbouncer.ini"
  else
    pgbouncer -d "$TOPOLOGY_DIR/pgbouncer.ini"
  fi

  say "Redis on $REDIS_PORT"
  export REDIS_PORT TOPOLOGY_DIR
  render "$DEPLOY/redis.conf" >"$TOPOLOGY_DIR/redis.conf"
  redis-server "$TOPOLOGY_DIR/redis.conf"

  say "schema: balcao migrate through PgBouncer"
  DATABASE_URL=$POOLED_URL BALCAO_DB_PREPARE=false LOG_LEVEL=warn node "$BALCAO_BIN" migrate >/dev/null

  local n
  for n in 1 2 3; do
    export BALCAO_PORT BALCAO_DATABASE_URL=$POOLED_URL BALCAO_LISTEN_DATABASE_URL=$DIRECT_URL BALCAO_DB_POOL_SIZE=${TOPOLOGY_DB_POOL_SIZE:-5} \
      BALCAO_REDIS_URL="redis://127.0.0.1:$REDIS_PORT" BALCAO_PUBLIC_URL="https://127.0.0.1:$HTTPS_PORT"
    BALCAO_PORT=$(instance_port "$n")
    render "$DEPLOY/balcao.env" >"$TOPOLOGY_DIR/s$n.env"
    [ -n "${TOPOLOGY_ENV:-}" ] && printf '%s\n' "$TOPOLOGY_ENV" >>"$TOPOLOGY_DIR/s$n.env"
    say "instance s$n on $BALCAO_PORT"
    start_instance "$n"
  done

  say "HAProxy on $HTTP_PORT (HTTP) and $HTTPS_PORT (TLS), runtime API on $ADMIN_PORT"
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
    -keyout "$TOPOLOGY_DIR/tls.key" -out "$TOPOLOGY_DIR/tls.crt" 2>/dev/null
  cat "$TOPOLOGY_DIR/tls.crt" "$TOPOLOGY_DIR/tls.key" >"$TOPOLOGY_DIR/tls.pem"
  export HAPROXY_ADMIN_PORT=$ADMIN_PORT HAPROXY_HTTP_PORT=$HTTP_PORT HAPROXY_HTTPS_PORT=$HTTPS_PORT TLS_PEM="$TOPOLOGY_DIR/tls.pem" \
    BALCAO_PORT_1="${INSTANCE_PORTS[0]}" BALCAO_PORT_2="${INSTANCE_PORTS[1]}" BALCAO_PORT_3="${INSTANCE_PORTS[2]}"
  render "$DEPLOY/haproxy.cfg" >"$TOPOLOGY_DIR/haproxy.cfg"
  haproxy -q -c -f "$TOPOLOGY_DIR/haproxy.cfg" >/dev/null
  haproxy -D -f "$TOPOLOGY_DIR/haproxy.cfg"
  for n in 1 2 3; do wait_stat "$n" status '^UP'; done
  say "up: http://127.0.0.1:$HTTP_PORT https://127.0.0.1:$HTTPS_PORT"
}

down() {
  local f pid
  for f in s1 s2 s3 haproxy; do
    pid=$(cat "$TOPOLOGY_DIR/$f.pid" 2>/dev/null || true)
    [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null || true
  done
  pid=$(cat "$TOPOLOGY_DIR/pgbouncer.pid" 2>/dev/null || true)
  [ -n "$pid" ] && kill -INT "$pid" 2>/dev/null || true
  pid=$(cat "$TOPOLOGY_DIR/redis.pid" 2>/dev/null || true)
  [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null || true
  if [ -f "$TOPOLOGY_DIR/pg/postmaster.pid" ]; then
    as_postgres "$PG_BIN/pg_ctl" -D "$TOPOLOGY_DIR/pg" -m fast -w stop >/dev/null 2>&1 || true
  fi
  for f in s1 s2 s3 haproxy pgbouncer redis; do
    pid=$(cat "$TOPOLOGY_DIR/$f.pid" 2>/dev/null || true)
    if [ -n "$pid" ]; then
      for ((i = 0; i < 100; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    fi
  done
  rm -rf "$TOPOLOGY_DIR"
}

# The rolling step for one instance (docs/deployment.md, "Upgrades"): HAProxy sends it no new
# request, the ones it holds finish, it stops, starts again (the new release), and comes back.
restart() {
  local n=$1
  admin "set server balcao/s$n state drain" >/dev/null
  wait_stat "$n" scur '^0$' 600
  stop_instance "$n"
  start_instance "$n"
  admin "set server balcao/s$n state ready" >/dev/null
  wait_stat "$n" status '^UP'
}

case "$cmd" in
up) up ;;
down) down ;;
restart) restart "$2" ;;
roll) for n in 1 2 3; do restart "$n"; done ;;
kill) kill -KILL "$(cat "$TOPOLOGY_DIR/s$2.pid")" ;;
start) start_instance "$2" && wait_stat "$2" status '^UP' ;;
migrate) DATABASE_URL=$POOLED_URL BALCAO_DB_PREPARE=false LOG_LEVEL=warn node "$BALCAO_BIN" migrate --json ;;
admin) admin "$2" ;;
env)
  echo "TOPOLOGY_URL=http://127.0.0.1:$HTTP_PORT TOPOLOGY_TLS_URL=https://127.0.0.1:$HTTPS_PORT TOPOLOGY_TLS_CA=$TOPOLOGY_DIR/tls.crt"
  echo "DATABASE_URL=$POOLED_URL BALCAO_DB_PREPARE=false BALCAO_LISTEN_DATABASE_URL=$DIRECT_URL REDIS_URL=redis://127.0.0.1:$REDIS_PORT"
  ;;
*)
  sed -n '2,27p' "$0" >&2
  exit 2
  ;;
esac
