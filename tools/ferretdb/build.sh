#!/usr/bin/env bash
# Builds tools/ferretdb (this wrapper) against FerretDB v1.24 patched with
# - pushdown.patch: the sort / limit / range / count pushdown of docs/decisions.md "Sort, limit, range and count
#   pushdown" (the patch's new file internal/backends/postgresql/aas_pushdown.go says what and why);
# - atomic-update.patch: one document's updates atomic, as on MongoDB (docs/decisions.md "Atomic updates on the
#   embedded database"; handler/common/update.go `updateAtomically` says how);
# - indexes.patch: no duplicate index when an index is created twice at once (its name was looked up database-wide),
#   and `_id` equality as `=`, served by the `_id_` btree (docs/decisions.md "Indexes of the embedded database: no
#   duplicates, `_id` from its own index").
# The module's source is copied out of Go's
# module cache (which must not be modified), patched, and used through a `replace` in a temporary copy of go.mod
# (-modfile), so the checked-in go.mod stays plain.
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
# git apply as a plain patch program: no repository is looked for above the copied source.
for patch in pushdown.patch atomic-update.patch indexes.patch; do
  (cd "$WORK/src" && GIT_CEILING_DIRECTORIES="$WORK" git apply -p1 "$HERE/$patch")
done
cp go.mod "$WORK/build.mod"
cp go.sum "$WORK/build.sum"
"$GO" mod edit -modfile="$WORK/build.mod" -replace "github.com/FerretDB/FerretDB=$WORK/src"
"$GO" build -modfile="$WORK/build.mod" -o "$OUT/ferretdb" .
