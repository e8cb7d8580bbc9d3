#!/usr/bin/env bash
# Run "$@" as root: directly when already root, otherwise through sudo
# (non-interactively when there is no terminal to ask for a password on).
set -euo pipefail

if [ "$#" -eq 0 ]; then
    echo "usage: $0 command [args...]" >&2
    exit 2
fi

if [ "$(id -u)" -eq 0 ]; then
    exec "$@"
fi

if ! command -v sudo >/dev/null 2>&1; then
    echo "$0: '$*' needs root, but this is not root and sudo is not installed." >&2
    echo "$0: run it as root (or install sudo and allow this user to use it)." >&2
    exit 1
fi

if [ -t 0 ]; then
    exec sudo "$@"
fi
if ! sudo -n true 2>/dev/null; then
    echo "$0: '$*' needs root; 'sudo -n' is not allowed without a password and there is no terminal to ask for one." >&2
    echo "$0: run it as root, or from a terminal, or configure passwordless sudo." >&2
    exit 1
fi
exec sudo -n "$@"
