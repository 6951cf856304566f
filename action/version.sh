#!/usr/bin/env bash
# Which tracelens the action installs, and the cache key of its binary. Composite actions may
# get an empty `github.action_ref`: the version then comes from the action's own Cargo.toml,
# and the key always carries a hash of the action's source, so a cached binary is never one
# of another version.
#   TL_REF               github.action_ref (may be empty)
#   GITHUB_ACTION_PATH   the action's checkout
#   RUNNER_OS, RUNNER_ARCH, GITHUB_OUTPUT: as the runner sets them
# Outputs: version (the release tag to download, e.g. v0.1.0), cache-key.
set -euo pipefail
: "${GITHUB_ACTION_PATH:?}" "${GITHUB_OUTPUT:?}"
root="$GITHUB_ACTION_PATH"
ref="${TL_REF:-}"
if [[ "$ref" =~ ^v[0-9]+\.[0-9]+\.[0-9]+ ]]; then
    version="$ref"
else
    # The workspace's version = "X.Y.Z" line (the first `version` under [workspace.package]).
    crate_version="$(sed -n '/^\[workspace.package\]/,/^\[/{s/^version *= *"\([^"]*\)".*/\1/p}' "$root/Cargo.toml" | head -n 1)"
    version="${crate_version:+v$crate_version}"
fi
# The source the binary would be built from: its lock file and every file of its crates.
source_hash="$(cd "$root" && { cat Cargo.toml Cargo.lock 2>/dev/null; find crates -type f -name '*.rs' -o -type f -name Cargo.toml -o -type f -name '*.html' | LC_ALL=C sort | xargs cat; } | { sha256sum 2>/dev/null || shasum -a 256; } | cut -c1-16)"
echo "version=$version" >> "$GITHUB_OUTPUT"
echo "cache-key=tracelens-bin-${RUNNER_OS:-os}-${RUNNER_ARCH:-arch}-${version:-unversioned}-$source_hash" >> "$GITHUB_OUTPUT"
echo "tracelens: version ${version:-unknown} (ref '${ref}'), source $source_hash"
