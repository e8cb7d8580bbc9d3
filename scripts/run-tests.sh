#!/usr/bin/env bash
# Run flowpg's test suites against temporary PostgreSQL instances:
#
#   regress    pg_regress:     sql/*.sql compared with expected/*.out
#   isolation  isolationtester: test/isolation/specs/*.spec, expected in test/isolation/expected/
#   tap        prove:          test/t/*.pl (PostgreSQL::Test::Cluster)
#   bench      test/bench/run.sh --quick, a smoke test of the benchmark
#
# Usage: scripts/run-tests.sh [regress] [isolation] [tap] [bench] [regress=name,name] ...
#   (no argument: all suites; "regress=a,b" runs only those tests of a suite)
#
# flowpg must already be built and installed ("make test" does both).  The
# regress and isolation suites run through the PGXS target (make installcheck
# TEMP_INSTANCE=1: the Makefile holds their pg_regress options); this script
# adds the private copy, the time limits, the diagnostics and the summary.  The
# suites run in a private copy of the checkout under /tmp; when run as root the
# copy is owned by, and the tests run as, the "postgres" user (initdb refuses
# root).  On failure the diffs are printed and the copy is kept for inspection
# (its path is printed); FLOWPG_KEEP_TMP=1 keeps it in any case.
#
# The last line printed is always "N passed, N failed" (tests counted: one per
# regress test, isolation spec and TAP file; a suite that fails without a
# per-test verdict counts as one failure).  The exit status is non-zero when
# anything failed.
set -euo pipefail

PG_MAJOR=15
PG_CONFIG=${PG_CONFIG:-$(command -v "/usr/lib/postgresql/${PG_MAJOR}/bin/pg_config" || command -v pg_config || true)}
if [ -z "$PG_CONFIG" ] || ! [ -x "$PG_CONFIG" ]; then
    echo "run-tests: pg_config not found; run scripts/install-deps.sh (or 'make deps') first." >&2
    echo "0 passed, 1 failed"
    exit 1
fi
BINDIR=$("$PG_CONFIG" --bindir)
PGXS_ROOT=$(dirname "$(dirname "$(dirname "$("$PG_CONFIG" --pgxs)")")")   # .../lib/pgxs
PG_REGRESS="$PGXS_ROOT/src/test/regress/pg_regress"   # for the TAP files
PG_PERL_LIB="$PGXS_ROOT/src/test/perl"

# Time limits (seconds): per suite (per file for TAP), and for the whole run.
# The suites take about 10 of them on an idle 2-core machine (with the
# builds, make test about 11 minutes); the whole-run cap leaves room for a
# slower machine rather than failing the last suite, within make test's 15.
REGRESS_TIMEOUT=${FLOWPG_REGRESS_TIMEOUT:-240}
ISOLATION_TIMEOUT=${FLOWPG_ISOLATION_TIMEOUT:-150}
TAP_TIMEOUT=${FLOWPG_TAP_TIMEOUT:-120}
TOTAL_BUDGET=${FLOWPG_TEST_BUDGET:-780}

###############################################################################
# Outer part: make the private copy and re-run this script inside it.
###############################################################################
if [ -z "${FLOWPG_TEST_WORKDIR:-}" ]; then
    SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

    if [ "$(id -u)" -eq 0 ]; then
        if ! id -u postgres >/dev/null 2>&1; then
            echo "run-tests: running as root needs the 'postgres' user (initdb refuses root);" \
                 "install postgresql-${PG_MAJOR} (scripts/install-deps.sh)." >&2
            echo "0 passed, 1 failed"
            exit 1
        fi
        RUN_AS=(runuser -u postgres --)
    else
        RUN_AS=()
    fi

    WORK=$(mktemp -d /tmp/flowpg-test.XXXXXX)
    # The checkout without git metadata, the demo cluster and earlier test output.
    tar -C "$SRC" -cf - \
        --exclude=./.git --exclude=./.demo \
        --exclude=./tmp_check --exclude=./tmp_check_iso --exclude=./results \
        --exclude=./output_iso --exclude=./log --exclude=./test/tmp_check \
        --exclude=./regression.diffs --exclude=./regression.out \
        . | tar -C "$WORK" -xf -
    if [ "$(id -u)" -eq 0 ]; then
        chown -R postgres:postgres "$WORK"
    fi

    # The upgrade tests (TAP) start on earlier releases: the newest one and
    # the first, built here, where the git history is
    # (scripts/previous-release.sh), and cached.
    PREVIOUS_RELEASE=
    RELEASE_0_1=
    if [ $# -eq 0 ] || printf '%s\n' "$@" | grep -q '^tap'; then
        RELEASE_CACHE=${FLOWPG_PREVIOUS_RELEASE_CACHE:-/tmp/flowpg-previous-release}
        PREVIOUS_RELEASE=$("$SRC/scripts/previous-release.sh" "$RELEASE_CACHE") ||
            PREVIOUS_RELEASE=
        RELEASE_0_1=$("$SRC/scripts/previous-release.sh" "$RELEASE_CACHE" 0.1) ||
            RELEASE_0_1=
    fi

    rc=0
    cd /    # the test user may not be able to enter the caller's directory
    "${RUN_AS[@]}" env FLOWPG_TEST_WORKDIR="$WORK" HOME="$WORK" \
        FLOWPG_PREVIOUS_RELEASE="$PREVIOUS_RELEASE" FLOWPG_RELEASE_0_1="$RELEASE_0_1" \
        bash "$WORK/scripts/run-tests.sh" "$@" || rc=$?

    if [ "$rc" -eq 0 ] && [ "${FLOWPG_KEEP_TMP:-0}" = 0 ]; then
        rm -rf "$WORK"
    fi
    exit "$rc"
fi

###############################################################################
# Inner part: runs in the private copy (as postgres when started by root).
###############################################################################
WORK=$FLOWPG_TEST_WORKDIR
cd "$WORK"
unset TEMP_CONFIG PGPORT PGHOST PGHOSTADDR PGDATABASE PGUSER PGSERVICE PGOPTIONS PGDATA
export LC_MESSAGES=C

PASSED=0
FAILED=0
FAILED_NAMES=()

# limit_for LIMIT: LIMIT, or what is left of the whole run's budget if less.
limit_for() {
    local left=$(( TOTAL_BUDGET - SECONDS ))
    if [ "$left" -lt "$1" ]; then echo "$left"; else echo "$1"; fi
}
# out_of_time WHAT: when the budget is spent, count WHAT as failed.
out_of_time() {
    if [ "$(limit_for 10)" -lt 10 ]; then
        echo "== $1: not run, the ${TOTAL_BUDGET}s budget of the whole run is spent"
        FAILED=$((FAILED + 1))
        FAILED_NAMES+=("$1 (not run: time budget spent)")
        return 0
    fi
    return 1
}

# Stop any server a killed or crashed suite left behind in the copy.
# stop_leftover_servers [TAP_NAME]: the servers a test left running (all,
# or those of one TAP file, whose nodes live in tmp_check/t_NAME_*).
stop_leftover_servers() {
    local pidfile pattern="*"
    [ -n "${1:-}" ] && pattern="*/t_${1}_*"
    while IFS= read -r pidfile; do
        "$BINDIR/pg_ctl" stop -D "$(dirname "$pidfile")" -m immediate -w >/dev/null 2>&1 || true
    done < <(find "$WORK" -path "$pattern" -name postmaster.pid 2>/dev/null)
}
trap 'stop_leftover_servers' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# A port that nothing listens on (pg_regress's temporary instances only use
# a private Unix socket directory, but let the ports differ between runs anyway).
pick_port() {
    local p _
    for _ in $(seq 1 50); do
        p=$(( (RANDOM * 32768 + RANDOM + $$) % 20000 + 40000 ))
        [ -e "/tmp/.s.PGSQL.$p" ] && continue
        [ -e "/var/run/postgresql/.s.PGSQL.$p" ] && continue
        if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
            continue
        fi
        echo "$p"
        return 0
    done
    echo $(( $$ % 20000 + 40000 ))
}

# Print a file, at most $2 lines of it.
print_capped() {
    local file=$1 max=${2:-3000} n
    n=$(wc -l < "$file")
    head -n "$max" "$file"
    if [ "$n" -gt "$max" ]; then
        echo "... ($((n - max)) more lines in $file)"
    fi
}

# Which suites (and optionally which tests of them) to run.
declare -A SELECT_SUITE=() SELECT_TESTS=()
if [ "$#" -eq 0 ]; then
    SELECT_SUITE=([regress]=1 [isolation]=1 [tap]=1 [bench]=1)
else
    for arg in "$@"; do
        suite=${arg%%=*}
        case "$suite" in
            regress|isolation|tap|bench) ;;
            *) echo "run-tests: unknown suite '$suite' (expected regress, isolation, tap or bench)" >&2
               echo "0 passed, 1 failed"; exit 2 ;;
        esac
        SELECT_SUITE[$suite]=1
        if [ "$arg" != "$suite" ]; then
            SELECT_TESTS[$suite]=${arg#*=}
        fi
    done
fi

# Basenames of "$1"/*"$2", sorted like make's $(sort), or the explicit selection.
list_tests() {
    local dir=$1 ext=$2 suite=$3
    if [ -n "${SELECT_TESTS[$suite]:-}" ]; then
        tr ',' '\n' <<<"${SELECT_TESTS[$suite]}" | sed '/^$/d'
        return
    fi
    local f
    for f in "$dir"/*"$ext"; do
        [ -e "$f" ] || continue
        f=${f##*/}
        echo "${f%"$ext"}"
    done | LC_ALL=C sort
}

# Count the per-test verdicts in a pg_regress log; add a suite failure when
# pg_regress failed without any failed test (initdb, server start, timeout...).
count_pg_regress() {
    local suite=$1 log=$2 rc=$3 ok bad
    ok=$(grep -Ec '^(test |     )?[[:space:]]*[^[:space:]]+[[:space:]]+\.\.\. (ok|failed \(ignored\))' "$log" || true)
    bad=$(grep -Ec '^(test |     )?[[:space:]]*[^[:space:]]+[[:space:]]+\.\.\. FAILED' "$log" || true)
    while IFS= read -r name; do
        FAILED_NAMES+=("$suite/$name")
    done < <(sed -nE 's/^(test |     )?[[:space:]]*([^[:space:]]+)[[:space:]]+\.\.\. FAILED.*/\2/p' "$log")
    if [ "$rc" -ne 0 ] && { [ "$bad" -eq 0 ] || [ -n "${4:-}" ]; }; then
        bad=$((bad + 1))
        FAILED_NAMES+=("$suite (exit status $rc${4:+, $4})")
    fi
    PASSED=$((PASSED + ok))
    FAILED=$((FAILED + bad))
    echo "== $suite: $ok passed, $bad failed"
}

# After a failed pg_regress run: crashes and fatal errors from the server log,
# or the logs' tails when no test even ran (initdb or server start failed).
print_server_problems() {
    local suite=$1 dir=$2 f
    if ! grep -Eq '\.\.\. (ok|FAILED|failed)' "$suite.log"; then
        for f in "$dir/log/initdb.log" "$dir/log/postmaster.log"; do
            [ -f "$f" ] || continue
            echo "== $suite: last lines of $f"
            tail -n 40 "$f"
        done
    elif [ -f "$dir/log/postmaster.log" ] &&
         grep -Eq 'PANIC|TRAP:|terminated by signal|FATAL' "$dir/log/postmaster.log"; then
        echo "== $suite: server crashes / fatal errors in $dir/log/postmaster.log"
        grep -E -B2 -A2 'PANIC|TRAP:|terminated by signal|FATAL' \
            "$dir/log/postmaster.log" | head -n 80
    fi
}

# pg_regress stops the whole suite at the first test without an expected
# file; give such tests an empty one in the copy, so they show up as failed
# (with their full output in the diff and in results/) and the others still run.
ensure_expected() {
    local dir=$1 name
    shift
    for name in "$@"; do
        if ! compgen -G "$dir/$name.out" >/dev/null && ! compgen -G "$dir/${name}_[0-9].out" >/dev/null; then
            echo "== no expected output $dir/$name.out: comparing with an empty file"
            mkdir -p "$dir"
            : > "$dir/$name.out"
        fi
    done
}

installed_check() {
    local libdir sharedir
    libdir=$("$PG_CONFIG" --pkglibdir)
    sharedir=$("$PG_CONFIG" --sharedir)
    if ! [ -e "$libdir/flowpg.so" ] || ! [ -e "$sharedir/extension/flowpg.control" ]; then
        echo "run-tests: WARNING: flowpg is not installed in $libdir / $sharedir/extension;" \
             "run 'make install' (make test does it)."
    fi
}

run_regress() {
    local tests=() rc=0 port limit
    mapfile -t tests < <(list_tests sql .sql regress)
    if [ "${#tests[@]}" -eq 0 ]; then
        echo "== regress: no tests (sql/*.sql)"
        return
    fi
    out_of_time regress && return
    limit=$(limit_for "$REGRESS_TIMEOUT")
    port=$(pick_port)
    echo "== regress: ${#tests[@]} tests, temporary instance on port $port"
    ensure_expected expected "${tests[@]}"
    rm -rf tmp_check results regression.diffs regression.out
    timeout --kill-after=15 "$limit" \
        make -s --no-print-directory installcheck PG_CONFIG="$PG_CONFIG" \
            TEMP_INSTANCE=1 ISOLATION= TAP_TESTS= REGRESS="${tests[*]}" \
            EXTRA_REGRESS_OPTS="--port=$port" > regress.log 2>&1 || rc=$?
    cat regress.log
    local why=""
    [ "$rc" -eq 124 ] && why="timed out after ${limit}s"
    count_pg_regress regress regress.log "$rc" "$why"
    if [ "$rc" -ne 0 ]; then
        if [ -s regression.diffs ]; then
            echo "== regress: regression.diffs"
            print_capped regression.diffs
        fi
        print_server_problems regress .
    fi
    stop_leftover_servers
}

run_isolation() {
    local tests=() rc=0 port limit
    mapfile -t tests < <(list_tests test/isolation/specs .spec isolation)
    if [ "${#tests[@]}" -eq 0 ]; then
        echo "== isolation: no specs (test/isolation/specs/*.spec)"
        return
    fi
    out_of_time isolation && return
    limit=$(limit_for "$ISOLATION_TIMEOUT")
    port=$(pick_port)
    echo "== isolation: ${#tests[@]} specs, temporary instance on port $port"
    ensure_expected test/isolation/expected "${tests[@]}"
    rm -rf tmp_check_iso output_iso
    mkdir -p output_iso
    # isolationtester gives up on a blocked step after 2 * PG_TEST_TIMEOUT_DEFAULT s.
    PG_TEST_TIMEOUT_DEFAULT=${PG_TEST_TIMEOUT_DEFAULT:-30} \
    timeout --kill-after=15 "$limit" \
        make -s --no-print-directory installcheck PG_CONFIG="$PG_CONFIG" \
            TEMP_INSTANCE=1 REGRESS= TAP_TESTS= ISOLATION="${tests[*]}" \
            EXTRA_REGRESS_OPTS="--port=$port" > isolation.log 2>&1 || rc=$?
    cat isolation.log
    local why=""
    [ "$rc" -eq 124 ] && why="timed out after ${limit}s"
    count_pg_regress isolation isolation.log "$rc" "$why"
    if [ "$rc" -ne 0 ]; then
        if [ -s output_iso/regression.diffs ]; then
            echo "== isolation: output_iso/regression.diffs"
            print_capped output_iso/regression.diffs
        fi
        print_server_problems isolation output_iso
    fi
    stop_leftover_servers
}

# The TAP files that run alongside the others: long, mostly waiting, and
# judging no timing (022 creates and drops 270 databases: checkpoints, not
# CPU; 005 dumps and restores; 018 drops the extension under writers).
# They keep the whole run within its ten minutes.
TAP_BACKGROUND=" 005_dump_restore 018_drop_extension 022_database_slots "

# tap_file NAME [LIMIT]: runs one TAP file (its own time limit); its exit status.
tap_file() {
    local name=$1 limit
    limit=$(limit_for "${2:-$TAP_TIMEOUT}")
    ( cd test &&
      PATH="$BINDIR:$PATH" \
      PG_REGRESS="$PG_REGRESS" \
      TESTDIR="$WORK/test" \
      TMPDIR="$WORK/tap_tmp" \
      PG_TEST_TIMEOUT_DEFAULT="${PG_TEST_TIMEOUT_DEFAULT:-60}" \
      timeout --kill-after=15 "$limit" \
          prove -I "$PG_PERL_LIB" -I "$WORK/test/t" "t/$name.pl" 2>&1 )
}

# tap_verdict NAME RC: counts the file, and prints its logs when it failed.
tap_verdict() {
    local name=$1 rc=$2 log
    if [ "$rc" -eq 0 ]; then
        TAP_OK=$((TAP_OK + 1))
        return
    fi
    TAP_BAD=$((TAP_BAD + 1))
    if [ "$rc" -eq 124 ]; then
        FAILED_NAMES+=("tap/$name (timed out)")
    else
        FAILED_NAMES+=("tap/$name")
    fi
    log="test/tmp_check/log/regress_log_$name"
    if [ -f "$log" ]; then
        echo "== tap: last lines of $log"
        tail -n 80 "$log"
    fi
    for log in test/tmp_check/log/"${name}"_*.log; do
        [ -f "$log" ] || continue
        if grep -Eq 'PANIC|TRAP:|terminated by signal|FATAL' "$log"; then
            echo "== tap: server crashes / fatal errors in $log"
            grep -E -B2 -A2 'PANIC|TRAP:|terminated by signal|FATAL' "$log" | head -n 60
        fi
    done
}

run_tap() {
    local tests=() name rc background=() bg_pids=()
    TAP_OK=0
    TAP_BAD=0
    mapfile -t tests < <(list_tests test/t .pl tap)
    if [ "${#tests[@]}" -eq 0 ]; then
        echo "== tap: no tests (test/t/*.pl)"
        return
    fi
    echo "== tap: ${#tests[@]} test files"
    rm -rf test/tmp_check tap_tmp
    # The nodes' socket directories (PostgreSQL::Test::Utils::tempdir_short,
    # kept when a test fails) go inside the copy instead of littering /tmp.
    mkdir -p tap_tmp
    # the background ones first, each in a subshell of its own, output kept
    for name in "${tests[@]}"; do
        [[ "$TAP_BACKGROUND" == *" $name "* ]] || continue
        background+=("$name")
        # slower beside the others: twice the limit of one file
        ( rc=0; tap_file "$name" $((2 * TAP_TIMEOUT)) >"tap_tmp/$name.out" 2>&1 || rc=$?
          echo "$rc" >"tap_tmp/$name.rc" ) &
        bg_pids+=($!)
    done
    for name in "${tests[@]}"; do
        [[ "$TAP_BACKGROUND" == *" $name "* ]] && continue
        rc=0
        if out_of_time "tap/$name"; then
            continue
        fi
        tap_file "$name" || rc=$?
        tap_verdict "$name" "$rc"
        stop_leftover_servers "$name"
    done
    for name in "${background[@]}"; do
        wait "${bg_pids[0]}" || true
        bg_pids=("${bg_pids[@]:1}")
        cat "tap_tmp/$name.out"
        tap_verdict "$name" "$(cat "tap_tmp/$name.rc" 2>/dev/null || echo 1)"
        stop_leftover_servers "$name"
    done
    PASSED=$((PASSED + TAP_OK))
    FAILED=$((FAILED + TAP_BAD))
    echo "== tap: $TAP_OK passed, $TAP_BAD failed"
}

# The benchmark in its quick mode, as a smoke test: it must run to the end
# and find every sink exact; its figures are not judged.
run_bench() {
    local rc=0
    if out_of_time "bench"; then
        return
    fi
    if [ ! -x test/tools/flowload ]; then
        echo "== bench: test/tools/flowload is not built (make)"
        FAILED=$((FAILED + 1))
        FAILED_NAMES+=("bench (flowload not built)")
        return
    fi
    echo "== bench: test/bench/run.sh --quick"
    timeout --kill-after=15 "$(limit_for 240)" bash test/bench/run.sh --quick 2>&1 || rc=$?
    if [ "$rc" -eq 0 ]; then
        PASSED=$((PASSED + 1))
        echo "== bench: 1 passed, 0 failed"
    else
        FAILED=$((FAILED + 1))
        FAILED_NAMES+=("bench (exit $rc)")
        echo "== bench: 0 passed, 1 failed"
    fi
}

installed_check
[ -n "${SELECT_SUITE[regress]:-}" ] && run_regress
[ -n "${SELECT_SUITE[isolation]:-}" ] && run_isolation
[ -n "${SELECT_SUITE[tap]:-}" ] && run_tap
[ -n "${SELECT_SUITE[bench]:-}" ] && run_bench

if [ "$FAILED" -ne 0 ]; then
    echo
    echo "FAILED:"
    printf '  %s\n' "${FAILED_NAMES[@]}"
    echo "Test output kept in $WORK (results/, regression.diffs, output_iso/, test/tmp_check/log/)."
fi
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
