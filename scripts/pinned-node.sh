#!/usr/bin/env bash
# The pinned Node: the one the production image runs (the Dockerfile's NODE_IMAGE), its version in .nvmrc (the one
# place; test/dockerCompose.test.ts holds the two equal). Prints the directory holding its `node` binary, installing
# it on first use:
#   scripts/pinned-node.sh           the `node` on PATH when it is already the pinned major, else the cached copy
#   scripts/pinned-node.sh --exact   always the cached copy of exactly the pinned version
# The copy is the official binary from the npm registry's `node-<os>-<arch>` package (only the registry needs to be
# reachable), unpacked into ${XDG_CACHE_HOME:-~/.cache}/agent-automation-service/node-VERSION, complete or not at all
# (unpacked and checked in a temporary directory, then renamed). Used by .ci/run (bash, before npm ci) and by the
# TypeScript launchers (scripts/lib/pinnedNode.ts: `npm run dev`, `npm start`, `npm run servers`, the benchmarks).
# Messages go to stderr, one line each; exit 1 when it cannot be installed (the launchers then fall back to their
# own node with a warning).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VERSION=$(tr -d ' \t\r\n' <"$root/.nvmrc" 2>/dev/null)
if ! [[ "$VERSION" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
  echo "pinned-node.sh: .nvmrc must hold an exact version such as 24.19.0, not '$VERSION'" >&2
  exit 1
fi

if [ "${1:-}" != "--exact" ] && command -v node >/dev/null &&
  [ "$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null)" = "${VERSION%%.*}" ]; then
  dirname "$(command -v node)"
  exit 0
fi

cache="${XDG_CACHE_HOME:-$HOME/.cache}/agent-automation-service/node-$VERSION"
if [ -x "$cache/bin/node" ]; then
  echo "$cache/bin"
  exit 0
fi

case "$(uname -s)" in Linux) os=linux ;; Darwin) os=darwin ;; *) os=unknown ;; esac
case "$(uname -m)" in x86_64 | amd64) arch=x64 ;; aarch64 | arm64) arch=arm64 ;; *) arch=unknown ;; esac
package="node-$os-$arch@$VERSION"
echo "installing Node $VERSION (the npm registry's $package) into $cache" >&2
mkdir -p "$(dirname "$cache")" || exit 1
tmp=$(mktemp -d "$(dirname "$cache")/tmp-node-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
# Bounded: an unreachable registry fails here instead of holding the launcher.
if ! (cd "$tmp" && timeout 600 npm pack --loglevel=error --fetch-retries=1 --fetch-retry-mintimeout=2000 \
  --fetch-retry-maxtimeout=5000 "$package" >pack.log 2>&1 && tar xzf node-*.tgz); then
  # npm's error code and its reason (a FetchError, a 404, no such version), not its stack.
  why=$(grep -m1 '^npm error code' "$tmp/pack.log" | sed 's/^npm error //')
  reason=$(grep -m1 -E 'FetchError|404 Not Found|No matching version' "$tmp/pack.log" | sed 's/^npm error //')
  echo "installing Node $VERSION failed: npm pack $package: ${why:-no package}${reason:+, $reason}" >&2
  exit 1
fi
got=$("$tmp/package/bin/node" --version 2>/dev/null)
if [ "$got" != "v$VERSION" ]; then
  echo "installing Node $VERSION failed: $package's bin/node says '${got:-nothing}'" >&2
  exit 1
fi
# A rename onto a directory another install finished first fails: theirs is used.
mv -T "$tmp/package" "$cache" 2>/dev/null || [ -x "$cache/bin/node" ] || {
  echo "installing Node $VERSION failed: cannot move it into $cache" >&2
  exit 1
}
echo "$cache/bin"
