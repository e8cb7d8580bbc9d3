#!/usr/bin/env bash
# flowpg demo: a throwaway PostgreSQL cluster with flowpg preloaded, a database
# "flowpg_demo" with the extension, and demo/demo.sql run in it.
#
#   scripts/demo.sh          start (or reuse) the cluster, recreate flowpg_demo, run the demo
#   scripts/demo.sh psql     open psql on flowpg_demo
#   scripts/demo.sh status   is the demo cluster running, and where
#   scripts/demo.sh stop     stop the cluster and delete it
#
# The cluster lives in .demo/ inside the checkout (port 54329, Unix socket in
# that directory, no TCP).  When run as root the cluster is owned by, and the
# server runs as, the "postgres" user; if that user cannot reach the checkout,
# or the checkout is not writable, the cluster goes to /tmp/flowpg-demo-<uid>.
# flowpg must be installed ("make demo" builds and installs it first).
set -euo pipefail

PG_MAJOR=15
PORT=${FLOWPG_DEMO_PORT:-54329}
DB=flowpg_demo
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
UID_NOW=$(id -u)
FALLBACK_DIR=/tmp/flowpg-demo-$UID_NOW
# Everything below uses absolute paths; run from / so that commands run as
# "postgres" never start in a directory that user cannot enter.
cd /

PG_CONFIG=${PG_CONFIG:-$(command -v "/usr/lib/postgresql/${PG_MAJOR}/bin/pg_config" || command -v pg_config || true)}
if [ -z "$PG_CONFIG" ] || ! [ -x "$PG_CONFIG" ]; then
    echo "demo: pg_config not found; run 'make demo' (or scripts/install-deps.sh) first." >&2
    exit 1
fi
BINDIR=$("$PG_CONFIG" --bindir)

unset PGHOST PGHOSTADDR PGPORT PGDATABASE PGUSER PGSERVICE PGOPTIONS PGDATA

if [ "$UID_NOW" -eq 0 ]; then
    if ! id -u postgres >/dev/null 2>&1; then
        echo "demo: running as root needs the 'postgres' user (the server cannot run as root);" \
             "install postgresql-${PG_MAJOR} (scripts/install-deps.sh)." >&2
        exit 1
    fi
    AS_SERVER=(runuser -u postgres --)
else
    AS_SERVER=()
fi

# Where an existing demo cluster is, if any.
existing_dir() {
    local d
    for d in "$REPO/.demo" "$FALLBACK_DIR"; do
        if [ -f "$d/data/PG_VERSION" ]; then
            echo "$d"
            return 0
        fi
    done
    return 1
}

# Unix socket paths are limited to ~107 bytes.
socket_dir_for() {
    local dir=$1
    if [ "$(( ${#dir} + 16 ))" -lt 100 ]; then
        echo "$dir"
    else
        echo "/tmp/flowpg-demo-sock-$UID_NOW"
    fi
}

server_can_use() {
    # Can the server user create files in (and reach) directory $1?
    "${AS_SERVER[@]}" test -w "$1" -a -x "$1"
}

choose_dir() {
    local dir
    if dir=$(existing_dir); then
        echo "$dir"
        return
    fi
    dir="$REPO/.demo"
    if mkdir -p "$dir" 2>/dev/null; then
        if [ "$UID_NOW" -eq 0 ]; then
            chown postgres:postgres "$dir"
            chmod 700 "$dir"
        fi
        if server_can_use "$dir"; then
            echo "$dir"
            return
        fi
        rmdir "$dir" 2>/dev/null || true
    fi
    echo "demo: the server user cannot use $REPO/.demo (a parent directory is not traversable" \
         "or the checkout is not writable); using $FALLBACK_DIR instead." >&2
    mkdir -p "$FALLBACK_DIR"
    if [ "$UID_NOW" -eq 0 ]; then
        chown postgres:postgres "$FALLBACK_DIR"
    fi
    chmod 700 "$FALLBACK_DIR"
    echo "$FALLBACK_DIR"
}

pg_ctl_() {
    "${AS_SERVER[@]}" "$BINDIR/pg_ctl" "$@"
}

is_running() {
    pg_ctl_ status -D "$1/data" >/dev/null 2>&1
}

psql_() {
    "$BINDIR/psql" -X -h "$SOCKDIR" -p "$PORT" -U postgres "$@"
}

cmd_stop() {
    local d found=0
    for d in "$REPO/.demo" "$FALLBACK_DIR"; do
        [ -d "$d" ] || continue
        found=1
        if [ -f "$d/data/PG_VERSION" ] && is_running "$d"; then
            pg_ctl_ stop -D "$d/data" -m fast -w >/dev/null
            echo "demo: stopped the cluster in $d"
        fi
        rm -rf "$d"
        echo "demo: removed $d"
    done
    rm -rf "/tmp/flowpg-demo-sock-$UID_NOW"
    [ "$found" -eq 1 ] || echo "demo: no demo cluster found"
}

cmd_status() {
    local d
    if ! d=$(existing_dir); then
        echo "demo: no demo cluster"
        return 1
    fi
    if is_running "$d"; then
        echo "demo: running in $d (port $PORT, socket directory $(socket_dir_for "$d"))"
    else
        echo "demo: stopped, in $d"
        return 1
    fi
}

# Start (or reuse) the cluster; sets DEMO_DIR and SOCKDIR.
ensure_cluster() {
    DEMO_DIR=$(choose_dir)
    SOCKDIR=$(socket_dir_for "$DEMO_DIR")
    if [ "$SOCKDIR" != "$DEMO_DIR" ]; then
        mkdir -p "$SOCKDIR"
        if [ "$UID_NOW" -eq 0 ]; then chown postgres:postgres "$SOCKDIR"; fi
        chmod 700 "$SOCKDIR"
    fi

    if ! [ -f "$DEMO_DIR/data/PG_VERSION" ]; then
        echo "demo: creating a cluster in $DEMO_DIR/data"
        rm -rf "$DEMO_DIR/data"
        "${AS_SERVER[@]}" "$BINDIR/initdb" -D "$DEMO_DIR/data" -U postgres -A trust \
            --no-locale -E UTF8 --no-sync > "$DEMO_DIR/initdb.log" 2>&1 || {
            cat "$DEMO_DIR/initdb.log" >&2
            echo "demo: initdb failed" >&2
            exit 1
        }
        "${AS_SERVER[@]}" tee -a "$DEMO_DIR/data/postgresql.conf" >/dev/null <<CONF

# flowpg demo (scripts/demo.sh)
port = $PORT
listen_addresses = ''
unix_socket_directories = '$SOCKDIR'
shared_preload_libraries = 'flowpg'
max_prepared_transactions = 10
fsync = off
lc_messages = 'C'
timezone = 'UTC'
flowpg.min_refresh_interval = '1s'
log_line_prefix = '%m [%p] %q%a '
CONF
    fi

    local pidfile="$DEMO_DIR/data/postmaster.pid"
    local lib
    lib="$("$PG_CONFIG" --pkglibdir)/flowpg.so"
    if is_running "$DEMO_DIR"; then
        # A newer flowpg.so is only picked up by a restart (it is preloaded).
        if [ -f "$lib" ] && [ -f "$pidfile" ] && [ "$lib" -nt "$pidfile" ]; then
            echo "demo: flowpg.so was reinstalled; restarting the demo cluster"
            pg_ctl_ restart -D "$DEMO_DIR/data" -m fast -w -l "$DEMO_DIR/server.log" >/dev/null || {
                tail -n 30 "$DEMO_DIR/server.log" >&2
                exit 1
            }
        else
            echo "demo: reusing the running cluster in $DEMO_DIR"
        fi
    else
        echo "demo: starting the cluster (port $PORT, socket directory $SOCKDIR)"
        pg_ctl_ start -D "$DEMO_DIR/data" -w -t 60 -l "$DEMO_DIR/server.log" >/dev/null || {
            echo "demo: the server did not start; last lines of $DEMO_DIR/server.log:" >&2
            tail -n 30 "$DEMO_DIR/server.log" >&2
            exit 1
        }
    fi
}

check_installed() {
    local libdir sharedir
    libdir=$("$PG_CONFIG" --pkglibdir)
    sharedir=$("$PG_CONFIG" --sharedir)
    if ! [ -e "$libdir/flowpg.so" ] || ! [ -e "$sharedir/extension/flowpg.control" ]; then
        echo "demo: flowpg is not installed ($libdir/flowpg.so, $sharedir/extension/flowpg.control);" \
             "run 'make demo', or 'make && make install' first." >&2
        exit 1
    fi
}

cmd_run() {
    check_installed
    ensure_cluster
    psql_ -q -d postgres -v ON_ERROR_STOP=1 \
        -c "SET client_min_messages = warning" \
        -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" \
        -c "CREATE DATABASE $DB"
    psql_ -q -d "$DB" -v ON_ERROR_STOP=1 -c "CREATE EXTENSION flowpg"
    echo "demo: running demo/demo.sql in database $DB"
    psql_ -d "$DB" -v ON_ERROR_STOP=1 -f "$REPO/demo/demo.sql"
    echo
    echo "demo: done.  The cluster keeps running:"
    echo "    scripts/demo.sh psql        (or: $BINDIR/psql -h $SOCKDIR -p $PORT -U postgres $DB)"
    echo "    scripts/demo.sh stop        stop and delete it (server log: $DEMO_DIR/server.log)"
}

cmd_psql() {
    local d
    if ! d=$(existing_dir) || ! is_running "$d"; then
        echo "demo: the demo cluster is not running; run scripts/demo.sh first." >&2
        exit 1
    fi
    SOCKDIR=$(socket_dir_for "$d")
    shift || true
    exec "$BINDIR/psql" -X -h "$SOCKDIR" -p "$PORT" -U postgres -d "$DB" "$@"
}

case "${1:-run}" in
    run|start) cmd_run ;;
    stop)      cmd_stop ;;
    status)    cmd_status ;;
    psql)      cmd_psql "$@" ;;
    *)
        echo "usage: $0 [run|stop|status|psql [psql options]]" >&2
        exit 2 ;;
esac
