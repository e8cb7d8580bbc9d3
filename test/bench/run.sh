#!/usr/bin/env bash
# flowpg benchmark (make bench; make test runs it with --quick as a smoke test).
#
# Starts a throwaway cluster, generates the workload of DESIGN.md section 4
# once -- metrics(ts timestamptz, device int, value float8), 2M rows over one
# day, 1000 devices, aggregated per device per minute with
# count/sum/avg/min/max -- and measures, in the same run, rows/s of
#
#   methods:  one COPY of all rows | 4 clients x 100-row INSERTs | 4 clients x 1-row INSERTs
#   configs:  no flow (the baseline) | a batching flow | a streaming flow |
#             a hand-written summary table (statement trigger, INSERT ... ON
#             CONFLICT DO UPDATE) | a materialized view refreshed after the load
#
# with repetitions, reporting medians and the ratio to the baseline.  It also
# measures an incremental batching refresh after 10,000 late rows spread over
# 5 minutes against a full recompute, and commit-to-sink freshness.  Every
# sink is verified exact at the end of each configuration.
#
# Usage: test/bench/run.sh [--quick] [--reps N] [--seconds S] [--rows N]
set -euo pipefail

QUICK=0
REPS=3
SECONDS_PER_LOAD=15
ROWS=2000000
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) QUICK=1; REPS=1; SECONDS_PER_LOAD=3; ROWS=200000 ;;
        --reps) REPS=$2; shift ;;
        --seconds) SECONDS_PER_LOAD=$2; shift ;;
        --rows) ROWS=$2; shift ;;
        --inner) INNER=1 ;;
        *) echo "bench: unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done

PG_CONFIG=${PG_CONFIG:-$(command -v /usr/lib/postgresql/15/bin/pg_config || command -v pg_config)}
BINDIR=$("$PG_CONFIG" --bindir)

###############################################################################
# Outer part: a work directory the server's user can write, then run inside.
###############################################################################
if [ -z "${INNER:-}" ]; then
    SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
    if [ ! -x "$SRC/test/tools/flowload" ]; then
        echo "bench: test/tools/flowload is not built (make -C test/tools)" >&2
        exit 1
    fi
    WORK=$(mktemp -d /tmp/flowpg-bench.XXXXXX)
    cp "$SRC/test/bench/run.sh" "$SRC/test/tools/flowload" "$WORK/"
    args=(--reps "$REPS" --seconds "$SECONDS_PER_LOAD" --rows "$ROWS")
    [ "$QUICK" = 1 ] && args+=(--quick --reps "$REPS" --seconds "$SECONDS_PER_LOAD" --rows "$ROWS")
    rc=0
    if [ "$(id -u)" -eq 0 ]; then
        chown -R postgres:postgres "$WORK"
        cd /
        runuser -u postgres -- env WORK="$WORK" bash "$WORK/run.sh" --inner "${args[@]}" || rc=$?
    else
        WORK="$WORK" bash "$WORK/run.sh" --inner "${args[@]}" || rc=$?
    fi
    [ "$rc" -eq 0 ] && rm -rf "$WORK" || echo "bench: work directory kept in $WORK" >&2
    exit "$rc"
fi

###############################################################################
# Inner part, as the server's user.
###############################################################################
cd "$WORK"
FLOWLOAD=$WORK/flowload
PORT=$(( 20000 + RANDOM % 20000 ))
DATA=$WORK/data
export PGHOST=$WORK PGPORT=$PORT PGDATABASE=bench PGUSER=$(id -un)
PSQL=("$BINDIR/psql" -X -q -v ON_ERROR_STOP=1 -At)

"$BINDIR/initdb" -D "$DATA" -A trust --no-locale -E UTF8 --no-sync >/dev/null
cat >> "$DATA/postgresql.conf" <<CONF
port = $PORT
listen_addresses = ''
unix_socket_directories = '$WORK'
shared_preload_libraries = 'flowpg'
shared_buffers = 1GB
work_mem = 64MB
maintenance_work_mem = 256MB
max_wal_size = 8GB
checkpoint_timeout = 30min
synchronous_commit = off
timezone = 'UTC'
lc_messages = 'C'
# the streaming state of a whole day (1.44M groups) fits
flowpg.state_memory = '1GB'
flowpg.queue_memory = '64MB'
CONF
"$BINDIR/pg_ctl" -D "$DATA" -l "$WORK/server.log" -w start >/dev/null
trap '"$BINDIR/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null 2>&1 || true' EXIT
"$BINDIR/createdb" bench
psql_c() { "${PSQL[@]}" -c "$1"; }

psql_c "CREATE EXTENSION flowpg"
echo "bench: generating $ROWS rows (one day, 1000 devices) ..."
psql_c "COPY (SELECT timestamptz '2024-01-01 00:00:00+00' + (i * 86400.0 / $ROWS) * interval '1 second',
                     1 + (i::bigint * 7919) % 1000, ((i::bigint * 104729) % 100000) / 1000.0
                FROM generate_series(0, $ROWS - 1) i) TO '$WORK/metrics.csv'"

FLOW_QUERY="SELECT device, date_trunc('minute', ts) AS minute, count(*) AS n, sum(value) AS total,
       avg(value) AS mean, min(value) AS lo, max(value) AS hi FROM metrics GROUP BY device, date_trunc('minute', ts)"

# setup_config NAME: a fresh metrics table and whatever maintains the aggregate.
setup_config() {
    "${PSQL[@]}" >/dev/null <<SQL
SET client_min_messages = warning;
SELECT flowpg.drop_flow(flow_name) FROM flowpg.flows;
DROP TABLE IF EXISTS metrics, agg_sink, summary CASCADE;
DROP MATERIALIZED VIEW IF EXISTS agg_mv;
CREATE TABLE metrics (ts timestamptz, device int, value float8);
-- as a time-series table would have, in every configuration: a small BRIN
-- index lets a batching refresh read only the time ranges it recomputes
CREATE INDEX ON metrics USING brin (ts) WITH (autosummarize = on);
SQL
    case "$1" in
        batching|streaming)
            psql_c "SELECT flowpg.create_flow('agg', 'agg_sink', \$q\$$FLOW_QUERY\$q\$, mode => '$1')" >/dev/null ;;
        trigger)
            "${PSQL[@]}" >/dev/null <<'SQL'
CREATE TABLE summary (device int, minute timestamptz, n bigint, total float8,
                      lo float8, hi float8, PRIMARY KEY (device, minute));
CREATE OR REPLACE FUNCTION summary_add() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
    INSERT INTO summary AS s
    SELECT device, date_trunc('minute', ts), count(*), sum(value), min(value), max(value)
      FROM new_rows GROUP BY 1, 2
    ON CONFLICT (device, minute) DO UPDATE
       SET n = s.n + excluded.n, total = s.total + excluded.total,
           lo = least(s.lo, excluded.lo), hi = greatest(s.hi, excluded.hi);
    RETURN NULL;
END $f$;
CREATE TRIGGER summary_add AFTER INSERT ON metrics REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION summary_add();
SQL
            ;;
        matview)
            psql_c "CREATE MATERIALIZED VIEW agg_mv AS $FLOW_QUERY WITH NO DATA" >/dev/null ;;
    esac
    psql_c "CHECKPOINT" >/dev/null
}

# After a load: bring the aggregate up to date; prints the seconds it took.
catch_up() {
    local t0 t1
    t0=$(date +%s.%N)
    case "$1" in
        batching|streaming) psql_c "SELECT flowpg.flush_flow('agg')" >/dev/null ;;
        matview) psql_c "REFRESH MATERIALIZED VIEW agg_mv" >/dev/null ;;
    esac
    t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc -l
}

# verify CONFIG: the maintained aggregate equals the query (0 = exact).
verify() {
    local target cols
    case "$1" in
        none) echo "-"; return ;;
        batching|streaming)
            if "$FLOWLOAD" -d "dbname=bench host=$WORK port=$PORT" --verify agg --tolerance 1e-9 \
                   >/dev/null 2>"$WORK/verify.log"; then echo "exact"; else echo "MISMATCH"; fi
            return ;;
        trigger) target="SELECT device, minute, n, round(total::numeric, 6), round((total / n)::numeric, 6), lo, hi FROM summary" ;;
        matview) target="SELECT device, minute, n, round(total::numeric, 6), round(mean::numeric, 6), lo, hi FROM agg_mv" ;;
    esac
    local truth="SELECT device, date_trunc('minute', ts), count(*), round(sum(value)::numeric, 6),
                        round(avg(value)::numeric, 6), min(value), max(value) FROM metrics GROUP BY 1, 2"
    local n
    n=$(psql_c "SELECT count(*) FROM (($target EXCEPT ALL $truth) UNION ALL ($truth EXCEPT ALL $target)) d")
    [ "$n" = 0 ] && echo "exact" || echo "MISMATCH ($n rows)"
}

median() { sort -g | awk '{a[NR]=$1} END {if (NR == 0) print 0; else if (NR % 2) print a[(NR+1)/2]; else print (a[NR/2] + a[NR/2+1]) / 2}'; }

# load_copy: seconds for one COPY of all rows.
load_copy() {
    local t0 t1
    t0=$(date +%s.%N)
    psql_c "COPY metrics FROM '$WORK/metrics.csv'"
    t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc -l
}

# load_clients BATCH METHOD: rows/s of 4 clients for SECONDS_PER_LOAD.
load_clients() {
    "$FLOWLOAD" -d "dbname=bench host=$WORK port=$PORT" --table metrics --clients 4 \
        --batch "$1" --method "$2" --duration "$SECONDS_PER_LOAD" --devices 1000 \
        --seed "$RANDOM" --json | sed -n 's/.*"rows_per_s": *\([0-9.]*\).*/\1/p'
}

CONFIGS=(none batching streaming trigger matview)
declare -A RESULT VERIFIED CATCHUP
for config in "${CONFIGS[@]}"; do
    echo "bench: $config ..."
    copy_rates=(); ins_rates=(); one_rates=(); catch=()
    for rep in $(seq 1 "$REPS"); do
        setup_config "$config"
        secs=$(load_copy)
        c=$(catch_up "$config")
        if [ "$config" = streaming ] && [ "$rep" = 1 ]; then
            STATE_PER_GROUP=$(psql_c "SELECT state_groups || ' groups, ' || round(state_bytes::numeric / nullif(state_groups, 0)) || ' bytes per group'
                                        FROM flowpg.flow_stats WHERE flow_name = 'agg'")
        fi
        if [ "$config" = matview ]; then secs=$(echo "$secs + $c" | bc -l); fi
        copy_rates+=("$(echo "$ROWS / $secs" | bc -l)")
        catch+=("$c")
        setup_config "$config"
        ins_rates+=("$(load_clients 100 insert)")
        c=$(catch_up "$config")
        setup_config "$config"
        one_rates+=("$(load_clients 1 single)")
        c=$(catch_up "$config")
    done
    VERIFIED[$config]=$(verify "$config")
    RESULT[$config,copy]=$(printf '%s\n' "${copy_rates[@]}" | median)
    RESULT[$config,insert]=$(printf '%s\n' "${ins_rates[@]}" | median)
    RESULT[$config,single]=$(printf '%s\n' "${one_rates[@]}" | median)
    CATCHUP[$config]=$(printf '%s\n' "${catch[@]}" | median)
done

# Incremental batching refresh after 10,000 late rows over 5 minutes vs a full recompute.
echo "bench: incremental refresh ..."
setup_config batching
load_copy >/dev/null
psql_c "SELECT flowpg.flush_flow('agg')" >/dev/null
# the steady state: autovacuum has summarized the BRIN ranges of the day
psql_c "VACUUM ANALYZE metrics" >/dev/null
psql_c "INSERT INTO metrics SELECT timestamptz '2024-01-01 12:00:00+00' + (i * 300.0 / 10000) * interval '1 second',
               1 + i % 1000, i / 100.0 FROM generate_series(0, 9999) i"
t0=$(date +%s.%N); psql_c "SELECT flowpg.flush_flow('agg')" >/dev/null; t1=$(date +%s.%N)
INCREMENTAL=$(echo "$t1 - $t0" | bc -l)
t0=$(date +%s.%N); psql_c "SELECT flowpg.refresh_flow('agg')" >/dev/null; t1=$(date +%s.%N)
FULL=$(echo "$t1 - $t0" | bc -l)
LATE_VERIFIED=$(verify batching)

# Freshness: from the commit of a row to its group in the sink, without
# flush_flow, while 4 clients load 20,000 rows/s.  A procedure commits the
# probe row and polls the sink every 5 ms.
echo "bench: freshness ..."
setup_config streaming
"${PSQL[@]}" >/dev/null <<'SQL'
CREATE PROCEDURE fresh_probe(k int, INOUT ms float8 DEFAULT 0) LANGUAGE plpgsql AS $p$
DECLARE
    at timestamptz := timestamptz '2024-01-05 00:00:00+00' + k * interval '1 minute';
    t0 timestamptz;
BEGIN
    INSERT INTO metrics VALUES (at, 1, 1);
    COMMIT;
    t0 := clock_timestamp();
    LOOP
        EXIT WHEN EXISTS (SELECT 1 FROM agg_sink WHERE minute = at AND device = 1);
        PERFORM pg_sleep(0.005);
        EXIT WHEN clock_timestamp() - t0 > interval '30 seconds';
    END LOOP;
    ms := extract(epoch FROM clock_timestamp() - t0) * 1000;
END $p$;
SQL
PROBES=$([ "$QUICK" = 1 ] && echo 10 || echo 100)
"$FLOWLOAD" -d "dbname=bench host=$WORK port=$PORT" --table metrics --clients 4 --batch 10 \
    --method insert --rate 20000 --duration $(( PROBES / 5 + 5 )) --devices 1000 --seed 5 \
    --json > "$WORK/fresh_load.json" 2>&1 &
LOAD_PID=$!
sleep 2
lat=()
for i in $(seq 1 "$PROBES"); do
    lat+=("$(psql_c "CALL fresh_probe($i)")")
    sleep 0.1
done
wait "$LOAD_PID" || true
FRESH_RATE=$(sed -n 's/.*"rows_per_s": *\([0-9.]*\).*/\1/p' "$WORK/fresh_load.json")
FRESH_MEDIAN=$(printf '%s\n' "${lat[@]}" | median)
FRESH_P99=$(printf '%s\n' "${lat[@]}" | sort -g | awk '{a[NR]=$1} END {i = int(NR * 0.99); if (i < 1) i = 1; print a[i]}')
FRESH_MAX=$(printf '%s\n' "${lat[@]}" | sort -g | tail -1)
FRESH_VERIFIED=$(verify streaming)

###############################################################################
# Report.
###############################################################################
ratio() { echo "scale=2; $1 / $2" | bc -l; }
fmt() { printf '%.0f' "$1"; }
echo
echo "flowpg benchmark  $(date -u '+%Y-%m-%d %H:%M UTC')  $(nproc) cores, PostgreSQL $("$BINDIR/postgres" --version | awk '{print $3}')"
echo "rows: $ROWS per COPY; 4-client loads: ${SECONDS_PER_LOAD}s each; medians of $REPS repetition(s)"
echo
printf '%-34s %13s %6s %13s %6s %13s %6s %9s  %s\n' "configuration" "COPY rows/s" "ratio" "4x100 rows/s" "ratio" "4x1 rows/s" "ratio" "catch-up" "sink"
for config in "${CONFIGS[@]}"; do
    label=$config
    case $config in
        none) label="no flow (baseline)" ;;
        batching) label="flowpg batching flow" ;;
        streaming) label="flowpg streaming flow" ;;
        trigger) label="trigger summary table" ;;
        matview) label="REFRESH MATERIALIZED VIEW" ;;
    esac
    printf '%-34s %13s %6s %13s %6s %13s %6s %8.2fs  %s\n' "$label" \
        "$(fmt "${RESULT[$config,copy]}")" "$(ratio "${RESULT[$config,copy]}" "${RESULT[none,copy]}")" \
        "$(fmt "${RESULT[$config,insert]}")" "$(ratio "${RESULT[$config,insert]}" "${RESULT[none,insert]}")" \
        "$(fmt "${RESULT[$config,single]}")" "$(ratio "${RESULT[$config,single]}" "${RESULT[none,single]}")" \
        "${CATCHUP[$config]}" "${VERIFIED[$config]}"
done
echo
echo "catch-up: time after the COPY until the aggregate is complete (flush_flow; REFRESH for the"
echo "materialized view, whose COPY rate includes it).  A 2M-row COPY is too big for the streaming"
echo "queue: its window range goes to the dirty log and the worker recomputes it."
echo
printf 'incremental refresh after 10,000 late rows over 5 minutes: %.3f s; full recompute: %.3f s; ratio 1/%.0f (%s)\n' \
    "$INCREMENTAL" "$FULL" "$(echo "$FULL / $INCREMENTAL" | bc -l)" "$LATE_VERIFIED"
printf 'freshness (commit to sink, no flush) under %.0f rows/s, %s probes: median %.0f ms, p99 %.0f ms, max %.0f ms (%s)\n' \
    "${FRESH_RATE:-0}" "$PROBES" "$FRESH_MEDIAN" "$FRESH_P99" "$FRESH_MAX" "$FRESH_VERIFIED"
echo "streaming state after the COPY: ${STATE_PER_GROUP:-n/a}"
for config in "${CONFIGS[@]}"; do
    case "${VERIFIED[$config]}" in MISMATCH*) echo "bench: $config sink is not exact" >&2; exit 1 ;; esac
done
case "$LATE_VERIFIED" in MISMATCH*) echo "bench: sink not exact after late rows" >&2; exit 1 ;; esac
case "$FRESH_VERIFIED" in MISMATCH*) echo "bench: streaming sink not exact after the freshness load" >&2; exit 1 ;; esac
