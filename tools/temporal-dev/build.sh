#!/usr/bin/env bash
# Builds tools/temporal-dev (the project's Temporal dev server: main.go) against the Temporal server v1.29.1, the
# version the Temporal CLI v1.5.1 runs, patched with slim.patch: the gcloud and s3store history archivers (and the
# Google Cloud, AWS and gRPC xDS code they import, about a quarter of what the CLI compiles) and the MySQL and
# PostgreSQL plugins are left out; the dev server stores in SQLite and never archives. As tools/ferretdb/build.sh
# does: the module's source is copied out of Go's module cache (which must not be modified), patched, and used
# through a `replace` in a temporary copy of go.mod (-modfile), so the checked-in go.mod stays plain.
# Usage: GO=/path/to/go build.sh <output directory>   (scripts/servers/binaries.ts runs it)
set -euo pipefail
GO=${GO:-go}
OUT=$1
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$HERE"
SRC=$("$GO" mod download -json go.temporal.io/server | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -d "$SRC" ] || { echo "build.sh: Temporal server module source not found ($SRC)" >&2; exit 1; }
cp -R "$SRC" "$WORK/src"
chmod -R u+w "$WORK/src"
# git apply as a plain patch program: no repository is looked for above the copied source.
(cd "$WORK/src" && GIT_CEILING_DIRECTORIES="$WORK" git apply -p1 "$HERE/slim.patch")
cp go.mod "$WORK/build.mod"
cp go.sum "$WORK/build.sum"
"$GO" mod edit -modfile="$WORK/build.mod" -replace "go.temporal.io/server=$WORK/src"
"$GO" build -modfile="$WORK/build.mod" -o "$OUT/temporal-dev" .
