#!/usr/bin/env bash
# Builds tools/ferretdb (this wrapper) against FerretDB v1.24 with the files of _overlay/ laid over the module's
# source: the sort / limit / comparison pushdown of the aas patch (_overlay/internal/backends/postgresql/
# aas_pushdown.go says what and why). Go refuses overlays of files in its module cache, so the module is copied,
# patched and used through a `replace` in a temporary copy of go.mod (-modfile); the checked-in go.mod stays plain.
# Usage: GO=/path/to/go build.sh <output directory>   (scripts/servers/binaries.ts runs it)
set -euo pipefail
GO=${GO:-go}
OUT=$1
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$HERE"
SRC=$("$GO" mod download -json github.com/FerretDB/FerretDB | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -d "$SRC" ] || { echo "build.sh: FerretDB module source not found ($SRC)" >&2; exit 1; }
cp -R "$SRC" "$WORK/src"
chmod -R u+w "$WORK/src"
cp -R "$HERE/_overlay/." "$WORK/src/"
cp go.mod "$WORK/build.mod"
cp go.sum "$WORK/build.sum"
"$GO" mod edit -modfile="$WORK/build.mod" -replace "github.com/FerretDB/FerretDB=$WORK/src"
"$GO" build -modfile="$WORK/build.mod" -o "$OUT/ferretdb" .
