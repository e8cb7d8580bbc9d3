#!/usr/bin/env bash
# The previous release of flowpg, for the upgrade test (test/t/026_upgrade.pl):
# builds it from its commit in this checkout's git history and makes a copy
# of this machine's PostgreSQL with it installed (hard links where it can:
# PostgreSQL finds its lib/ and share/ relative to its binaries, so the copy
# runs the old flowpg and the real installation the new one).
#
# Usage: scripts/previous-release.sh CACHE_DIR [VERSION]
#   prints the copy's install path (the directory holding bin/ and lib/) of
#   VERSION, by default the newest release before this one.
# The result is kept in CACHE_DIR, per release commit and PostgreSQL version.
set -euo pipefail

# The releases users run: the commit each was released from.
declare -A RELEASE_COMMIT=(
    [0.1]=1047cc2639b859fe1083aff1799226ae4558b668
    [0.2]=d3661bad7ab5bc036c397495d47c5ce004c8e0a9
)
NEWEST_RELEASE=0.2

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${1:?usage: previous-release.sh CACHE_DIR [VERSION]}
PREVIOUS_VERSION=${2:-$NEWEST_RELEASE}
PREVIOUS_COMMIT=${RELEASE_COMMIT[$PREVIOUS_VERSION]:-}
if [ -z "$PREVIOUS_COMMIT" ]; then
    echo "previous-release: no release $PREVIOUS_VERSION (known: ${!RELEASE_COMMIT[*]})" >&2
    exit 1
fi
PG_CONFIG=${PG_CONFIG:-$(command -v /usr/lib/postgresql/15/bin/pg_config || command -v pg_config)}
BINDIR=$("$PG_CONFIG" --bindir)
LIBDIR=$("$PG_CONFIG" --pkglibdir)
SHAREDIR=$("$PG_CONFIG" --sharedir)
PGVERSION=$("$PG_CONFIG" --version | tr -c 'A-Za-z0-9.\n' '_')
DEST="$CACHE/$PREVIOUS_VERSION-${PREVIOUS_COMMIT:0:12}-$PGVERSION"
INSTALL="$DEST/root$(dirname "$BINDIR")"

if [ -f "$DEST/done" ]; then
    echo "$INSTALL"
    exit 0
fi
if ! git -C "$SRC" cat-file -e "$PREVIOUS_COMMIT^{commit}" 2>/dev/null; then
    echo "previous-release: commit $PREVIOUS_COMMIT (flowpg $PREVIOUS_VERSION) is not in $SRC's git history;" \
         "the upgrade test needs a clone with history" >&2
    exit 1
fi
rm -rf "$DEST"
mkdir -p "$DEST/src"
git -C "$SRC" archive "$PREVIOUS_COMMIT" | tar -C "$DEST/src" -xf -
make -s -C "$DEST/src" PG_CONFIG="$PG_CONFIG" -j2 flowpg.so >"$DEST/build.log" 2>&1 ||
    { cat "$DEST/build.log" >&2; exit 1; }

# bin/ and lib/ (Debian: one parent), and share/
link_copy() {
    mkdir -p "$(dirname "$2")"
    cp -al "$1" "$2" 2>/dev/null || { rm -rf "$2"; cp -a "$1" "$2"; }
}
link_copy "$(dirname "$BINDIR")" "$INSTALL"
link_copy "$SHAREDIR" "$DEST/root$SHAREDIR"
rm -f "$DEST/root$LIBDIR/flowpg.so" "$DEST/root$SHAREDIR"/extension/flowpg*
cp "$DEST/src/flowpg.so" "$DEST/root$LIBDIR/"
cp "$DEST/src/flowpg.control" "$DEST/src"/flowpg--*.sql "$DEST/root$SHAREDIR/extension/"
chmod -R a+rX "$DEST"
touch "$DEST/done"
echo "$INSTALL"
