#!/usr/bin/env bash
# Proves Balcão on a real Citus cluster (issue 27): builds and installs Citus from a source tree,
# starts a coordinator and two workers on loopback, migrates and distributes a database the way an
# operator would (`balcao migrate`, then migrations/citus/distribute.sql), and runs part of the
# test suite against the coordinator. Run by hand (CI cannot download Citus); see docs/scale-out.md.
#   scripts/citus-check.sh /work/citus-src            # build, install, start, check, stop
#   CITUS_SKIP_BUILD=1 scripts/citus-check.sh <dir>   # reuse an installed build
#   CITUS_KEEP=1 (leave the cluster running), CITUS_TESTS="test/a.test.ts …" (another part of the suite),
#   CITUS_BASE_PORT (57400: coordinator; the workers take the next two ports).
# Node logs and each test file's output stay in the printed temporary directory (/tmp/balcao-citus.*).
# Needs root for `make install` and runs PostgreSQL as the `postgres` user.
set -euo pipefail

SRC=${1:?usage: scripts/citus-check.sh <citus source dir>}
SRC=$(cd "$SRC" && pwd)
REPO=$(cd "$(dirname "$0")/.." && pwd)
BASE_PORT=${CITUS_BASE_PORT:-57400}
COORD=$BASE_PORT W1=$((BASE_PORT + 1)) W2=$((BASE_PORT + 2))
PGBIN=$(pg_config --bindir)
WORK=$(mktemp -d /tmp/balcao-citus.XXXXXX)
chown postgres "$WORK"
log() { printf '== %s\n' "$*"; }

if [ "${CITUS_SKIP_BUILD:-}" != 1 ]; then
  log "build Citus in $SRC against $(pg_config --version)"
  # Debian's 15.20 server headers declare have_createdb_privilege(), which Citus 13.2.2 also
  # defines as static for PostgreSQL < 16: guard its copy (no Citus tag fixes this; newer ones drop 15).
  if ! grep -q 'PG_VERSION_NUM < 150020' "$SRC/src/include/pg_version_compat.h"; then
    perl -0pi -e 's/(static inline bool\nhave_createdb_privilege\(void\)\n\{.*?\n\}\n)/#if PG_VERSION_NUM < 150020\n$1#endif\n/s' \
      "$SRC/src/include/pg_version_compat.h"
  fi
  (cd "$SRC" && { [ -f Makefile.global ] || ./configure --without-libcurl >/dev/null; } && nice -n 19 make -j2 >/dev/null && make install >/dev/null)
fi

PIDS=()
stop_all() {
  for dir in "$WORK"/n*; do
    [ -f "$dir/postmaster.pid" ] && su postgres -c "$PGBIN/pg_ctl -D $dir -m fast -w stop" >/dev/null 2>&1 || true
  done
}
[ "${CITUS_KEEP:-}" = 1 ] || trap stop_all EXIT

for port in $COORD $W1 $W2; do
  dir=$WORK/n$port
  su postgres -c "$PGBIN/initdb -D $dir -U postgres --auth=trust" >/dev/null
  su postgres -c "$PGBIN/pg_ctl -D $dir -l $dir.log -w start -o '-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$dir -c shared_preload_libraries=citus -c fsync=off -c max_connections=300 -c max_prepared_transactions=200 -c wal_level=logical -c max_wal_senders=50 -c max_replication_slots=50 -c citus.enable_change_data_capture=on'" >/dev/null
done
psqlc() { "$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -U postgres "$@"; }
log "cluster: coordinator 127.0.0.1:$COORD, workers :$W1 :$W2 (logs in $WORK)"

# The operator's path, on a database of its own: citus in it and the workers added, `balcao migrate`,
# the distribution, and `balcao migrate` again (it must see every migration applied).
DB=balcao
COORD_URL=postgres://postgres@127.0.0.1:$COORD
psqlc -p "$COORD" -d postgres -c "CREATE DATABASE $DB"
for port in $W1 $W2; do
  psqlc -p "$port" -d postgres -c "CREATE DATABASE $DB"
  psqlc -p "$port" -d "$DB" -c "CREATE EXTENSION citus"
done
psqlc -p "$COORD" -d "$DB" -c "CREATE EXTENSION citus" \
  -c "SELECT citus_set_coordinator_host('127.0.0.1', $COORD)" \
  -c "SELECT citus_add_node('127.0.0.1', $W1)" -c "SELECT citus_add_node('127.0.0.1', $W2)" >/dev/null
(cd "$REPO" && npm run build >/dev/null 2>&1)
log "balcao migrate"
DATABASE_URL=$COORD_URL/$DB node "$REPO/bin/balcao.js" migrate --json
log "distribute (migrations/citus/distribute.sql)"
start=$(date +%s.%N)
psqlc -p "$COORD" -d "$DB" -f "$REPO/migrations/citus/distribute.sql"
log "distributed in $(echo "$(date +%s.%N) - $start" | bc) s"
psqlc -p "$COORD" -d "$DB" -c "SELECT citus_table_type, count(*) AS tables, max(colocation_id) AS colocation FROM citus_tables GROUP BY 1 ORDER BY 1"
psqlc -p "$COORD" -d "$DB" -c "SELECT nodename, nodeport, count(*) AS shards FROM citus_shards GROUP BY 1, 2 ORDER BY 2"
log "balcao migrate again, on the distributed database"
DATABASE_URL=$COORD_URL/$DB node "$REPO/bin/balcao.js" migrate --json

# Part of the suite against the coordinator: every test database is made on all three nodes,
# migrated and distributed (test/helpers/citus.ts).
TESTS=${CITUS_TESTS:-test/citus-ready-schema.test.ts test/change-capture.test.ts test/capture-faults.test.ts test/read-resources.test.ts test/read-includes.test.ts test/write-resources.test.ts test/write-sales.test.ts test/idempotency.test.ts test/etags.test.ts test/batch.test.ts test/request-log.test.ts test/events-feed.test.ts test/webhooks.test.ts test/import-cli.test.ts test/export-roundtrip.test.ts test/data-subject.test.ts}
log "tests against the coordinator: $TESTS"
status=0
for t in $TESTS; do
  if (cd "$REPO" && TEST_DATABASE_URL=$COORD_URL/postgres TEST_CITUS_WORKERS=127.0.0.1:$W1,127.0.0.1:$W2 TEST_REDIS_URL= \
      TEST_CITUS_NODE_DIRS=$W1=$WORK/n$W1,$W2=$WORK/n$W2 TEST_CITUS_PGBIN=$PGBIN \
      node --import tsx --test "$t" >"$WORK/$(basename "$t").log" 2>&1); then
    log "PASS $t"
  else
    status=1
    log "FAIL $t ($WORK/$(basename "$t").log)"
    grep -E '^\s*(not ok|error:)' "$WORK/$(basename "$t").log" | head -20
  fi
done
exit $status
