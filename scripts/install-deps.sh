#!/usr/bin/env bash
# Install the Debian packages flowpg needs to build, test and run its demo.
#
# Idempotent and fast: when every package is already installed (checked with
# dpkg-query) it does nothing, not even "apt-get update".  Needs root or
# passwordless sudo only when something is missing.
#
# Installing postgresql-15 on Debian may create and start a default cluster
# "15/main" on port 5432; flowpg's scripts never use it.
set -euo pipefail

PG_MAJOR=15

# What the build, the test suites and the demo use:
#   postgresql-15              server binaries (initdb, pg_ctl, postgres), contrib
#   postgresql-server-dev-15   PGXS, headers, clang/llvm for the JIT bitcode;
#                              pulls postgresql-client-15, which ships pg_regress,
#                              pg_isolation_regress and the PostgreSQL::Test perl modules
#   libpq-dev                  libpq headers (test tools, benchmark)
#   libipc-run-perl            IPC::Run, needed by PostgreSQL::Test::Cluster (TAP)
#   perl                       prove, Test::More
#   gcc, make                  the build
#   diffutils                  diff, used by pg_regress
#   util-linux                 runuser, used when the scripts run as root
#   bc                         arithmetic in the benchmark
#   postgresql-15-hll, -unit   extension aggregates the regression suites run
#                              in streaming flows (hll_union_agg, avg(unit))
#   postgresql-15-partman      pg_partman: the retention test drops the raw
#                              partitions of a source as its users do
REQUIRED=(
    "postgresql-${PG_MAJOR}"
    "postgresql-server-dev-${PG_MAJOR}"
    libpq-dev
    libipc-run-perl
    perl
    gcc
    make
    diffutils
    util-linux
    bc
    "postgresql-${PG_MAJOR}-hll"
    "postgresql-${PG_MAJOR}-unit"
    "postgresql-${PG_MAJOR}-partman"
)

is_installed() {
    local status
    status=$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null) || return 1
    [ "$status" = "install ok installed" ]
}

if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
    echo "install-deps: this script supports Debian/Ubuntu (dpkg + apt) only." >&2
    echo "install-deps: install PostgreSQL ${PG_MAJOR} with its server development files," \
         "IPC::Run, gcc and make by hand." >&2
    exit 1
fi

missing=()
for pkg in "${REQUIRED[@]}"; do
    is_installed "$pkg" || missing+=("$pkg")
done

if [ "${#missing[@]}" -eq 0 ]; then
    exit 0
fi

echo "install-deps: missing packages: ${missing[*]}"

# Root, or passwordless sudo.
if [ "$(id -u)" -eq 0 ]; then
    AS_ROOT=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    AS_ROOT=(sudo -n)
else
    echo "install-deps: installing packages needs root, and this user ($(id -un)) is neither root" >&2
    echo "install-deps: nor allowed to run 'sudo -n'.  Run as root:" >&2
    echo "    apt-get update && apt-get install -y ${missing[*]}" >&2
    exit 1
fi

apt_get() {
    "${AS_ROOT[@]}" env DEBIAN_FRONTEND=noninteractive apt-get \
        -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "$@"
}

has_candidate() {
    # true when apt knows an installable (non-virtual) version of package $1
    local cand
    cand=$(apt-cache policy "$1" 2>/dev/null | sed -n 's/^ *Candidate: *//p' | head -n 1)
    [ -n "$cand" ] && [ "$cand" != "(none)" ]
}

apt_get update -q

# Not Debian 12 (or an Ubuntu without PostgreSQL 15): use the PGDG repository,
# set up the way postgresql-common documents it.
if ! has_candidate "postgresql-${PG_MAJOR}"; then
    echo "install-deps: postgresql-${PG_MAJOR} is not in the configured apt sources;" \
         "adding apt.postgresql.org (PGDG)"
    apt_get install -y -q --no-install-recommends postgresql-common ca-certificates
    "${AS_ROOT[@]}" /usr/share/postgresql-common/pgdg/apt.postgresql.org.sh -y
    if ! has_candidate "postgresql-${PG_MAJOR}"; then
        echo "install-deps: postgresql-${PG_MAJOR} is still not installable; giving up." >&2
        exit 1
    fi
fi

# Contrib: since PostgreSQL 10 it ships inside postgresql-15; install the
# separate package only where it exists for this major version (never the
# "postgresql-contrib" metapackage of another major, which would pull a second server).
if ! is_installed "postgresql-contrib-${PG_MAJOR}" && has_candidate "postgresql-contrib-${PG_MAJOR}"; then
    missing+=("postgresql-contrib-${PG_MAJOR}")
elif ! is_installed postgresql-contrib && has_candidate postgresql-contrib; then
    cand=$(apt-cache policy postgresql-contrib | sed -n 's/^ *Candidate: *//p' | head -n 1)
    case "$cand" in
        "${PG_MAJOR}+"*) missing+=(postgresql-contrib) ;;
    esac
fi

# Never change what the machine already runs: packages built from the
# server's source (headers, client, libpq) are installed at the version of
# the installed server, and a plan that would upgrade any installed package
# stops here instead.
installed_version() {
    dpkg-query -W -f='${Version}' "$1" 2>/dev/null
}
server_version=""
is_installed "postgresql-${PG_MAJOR}" && server_version=$(installed_version "postgresql-${PG_MAJOR}")
request=()
for pkg in "${missing[@]}"; do
    case "$pkg" in
        "postgresql-server-dev-${PG_MAJOR}"|"postgresql-client-${PG_MAJOR}"|libpq-dev|libpq5)
            if [ -n "$server_version" ]; then
                if ! apt-cache madison "$pkg" | awk -F'|' '{gsub(/ /, "", $2); print $2}' |
                        grep -qxF "$server_version"; then
                    echo "install-deps: the installed server is postgresql-${PG_MAJOR} $server_version," \
                         "but $pkg $server_version is not available from the apt sources." >&2
                    echo "install-deps: installing another version of $pkg would need the server" \
                         "upgraded, which this script never does on its own." >&2
                    echo "install-deps: upgrade the server yourself (apt-get install postgresql-${PG_MAJOR})," \
                         "or make $pkg $server_version available, then run this again." >&2
                    exit 1
                fi
                request+=("$pkg=$server_version")
                continue
            fi
            ;;
    esac
    request+=("$pkg")
done

plan=$(apt_get install -s -q --no-install-recommends --no-upgrade "${request[@]}" 2>&1) || {
    echo "$plan" >&2
    echo "install-deps: apt-get cannot install ${request[*]}" >&2
    exit 1
}
upgrades=$(printf '%s\n' "$plan" | sed -n 's/^Inst \([^ ]*\) \[\([^]]*\)\].*/\1 \2/p')
if [ -n "$upgrades" ]; then
    echo "install-deps: installing ${request[*]} would upgrade packages this machine already has:" >&2
    printf '    %s\n' "$upgrades" >&2
    echo "install-deps: nothing was changed; install or upgrade them yourself if that is what you want." >&2
    exit 1
fi

echo "install-deps: installing: ${request[*]}"
apt_get install -y -q --no-install-recommends --no-upgrade "${request[@]}"

still=()
for pkg in "${REQUIRED[@]}"; do
    is_installed "$pkg" || still+=("$pkg")
done
if [ "${#still[@]}" -ne 0 ]; then
    echo "install-deps: still missing after apt-get install: ${still[*]}" >&2
    exit 1
fi
echo "install-deps: done"
