#!/usr/bin/env bash
# npm run bench: every part in turn, or the one BENCH_PART names (http, import, pgbouncer, replica, mix, first-page,
# patch-statements, write-cpu).
set -euo pipefail
cd "$(dirname "$0")/.."
part=${BENCH_PART:-all}
run() { if [ "$part" = all ] || [ "$part" = "$1" ]; then node --import tsx "bench/$2"; fi; }
run http http-bench.ts
run import import.ts
run pgbouncer pgbouncer.ts
run replica replica.ts
run mix mix/mix.ts
run first-page first-page.ts
run patch-statements patch-statements.ts
run write-cpu write-cpu.ts
