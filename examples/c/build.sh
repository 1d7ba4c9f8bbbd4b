#!/usr/bin/env bash
# Build the example C and C++ MPI programs into OUTDIR (nothing is built in
# the source tree).
#
#   examples/c/build.sh OUTDIR [SOURCE ...]
#
# Without SOURCE, every *.c and *.cpp of this directory is built; each
# program is OUTDIR/<name without extension>. The compilers are $MPICC and
# $MPICXX when set, else the venv's (.venv/bin/mpicc of this checkout, the
# pip MPICH that `mpvis run` uses), else mpicc/mpicxx from PATH. Programs are
# built with -g so that mpvis can name the file:line of each call.
set -euo pipefail
if [ $# -lt 1 ]; then
    echo "usage: $0 OUTDIR [SOURCE ...]" >&2
    exit 2
fi
here="$(cd "$(dirname "$0")" && pwd)"
venv_bin="$here/../../.venv/bin"
out="$1"
shift

pick() { # pick VAR_VALUE VENV_NAME PATH_NAME
    if [ -n "$1" ]; then echo "$1"
    elif [ -x "$venv_bin/$2" ]; then echo "$venv_bin/$2"
    elif command -v "$3" >/dev/null 2>&1; then command -v "$3"
    else echo ""
    fi
}
cc="$(pick "${MPICC:-}" mpicc mpicc)"
cxx="$(pick "${MPICXX:-}" mpicxx mpicxx)"

if [ $# -eq 0 ]; then
    set -- "$here"/*.c "$here"/*.cpp
fi
mkdir -p "$out"
for src in "$@"; do
    name="$(basename "$src")"
    case "$name" in
        *.c) compiler="$cc"; exe="${name%.c}" ;;
        *.cpp) compiler="$cxx"; exe="${name%.cpp}" ;;
        *) echo "$0: not a C or C++ source: $src" >&2; exit 2 ;;
    esac
    if [ -z "$compiler" ]; then
        echo "$0: no MPI compiler for $name (set MPICC/MPICXX, or install the mpich wheel)" >&2
        exit 1
    fi
    "$compiler" -g -O0 -Wall -o "$out/$exe" "$src"
done
