#!/usr/bin/env bash
# Puts a `tracelens` binary on the PATH for the action: the cached one, else the release's
# prebuilt binary for this runner (with `gh`, else over HTTPS; SHA-256 checked), else a source
# build of the action's own checkout.
#   TL_VERSION   the release tag (action/version.sh: the action's ref, e.g. v0.2.0, else
#                its Cargo.toml's version); without a release the source is built
#   TL_REPO      owner/name of the action's repository (github.action_repository)
#   TL_BIN_DIR   where the binary goes (cached by action.yml between runs)
#   TL_DOWNLOAD_BASE where releases are downloaded from without `gh` (default
#                https://github.com; a mirror, or a file:// folder in the tests)
#   RUNNER_OS, RUNNER_ARCH, GITHUB_ACTION_PATH, GITHUB_PATH, GH_TOKEN: as the runner sets them
set -euo pipefail
: "${TL_BIN_DIR:?}" "${GITHUB_PATH:?}"
exe=tracelens
[ "${RUNNER_OS:-}" = Windows ] && exe=tracelens.exe
mkdir -p "$TL_BIN_DIR"
if [ -x "$TL_BIN_DIR/$exe" ]; then
    echo "tracelens: cached $("$TL_BIN_DIR/$exe" --version)"
    echo "$TL_BIN_DIR" >> "$GITHUB_PATH"
    exit 0
fi

case "${RUNNER_OS:-}-${RUNNER_ARCH:-}" in
    Linux-X64) target=x86_64-unknown-linux-musl ;;
    Linux-ARM64) target=aarch64-unknown-linux-musl ;;
    macOS-X64) target=x86_64-apple-darwin ;;
    macOS-ARM64) target=aarch64-apple-darwin ;;
    Windows-X64) target=x86_64-pc-windows-msvc ;;
    *) target="" ;;
esac

# A release tag looks like v1.2.3; anything else (main, a sha) has no prebuilt binary.
# `gh` downloads it where it is installed; a bare self-hosted runner gets it over plain HTTPS
# (curl or wget). Either way the archive is checked against the release's .sha256 first.
download() { # URL FILE
    if command -v curl >/dev/null 2>&1; then
        curl -fsSL --retry 3 -o "$2" "$1"
    elif command -v wget >/dev/null 2>&1; then
        wget -q -O "$2" "$1"
    else
        return 1
    fi
}
verify() { # FOLDER ARCHIVE
    if command -v sha256sum >/dev/null 2>&1; then
        (cd "$1" && sha256sum -c "$2.sha256" >/dev/null)
    elif command -v shasum >/dev/null 2>&1; then
        (cd "$1" && shasum -a 256 -c "$2.sha256" >/dev/null)
    else
        echo "tracelens: error: neither sha256sum nor shasum to check the download with" >&2
        return 1
    fi
}
if [[ -n "$target" && "${TL_VERSION:-}" =~ ^v[0-9]+\.[0-9]+\.[0-9]+ && -n "${TL_REPO:-}" ]]; then
    archive="tracelens-$target.tar.gz"
    [ "${RUNNER_OS:-}" = Windows ] && archive="tracelens-$target.zip"
    tmp="$(mktemp -d)"
    got=""
    if command -v gh >/dev/null 2>&1 &&
        gh release download "$TL_VERSION" --repo "$TL_REPO" --pattern "$archive" --pattern "$archive.sha256" --dir "$tmp" 2>/dev/null; then
        got=gh
    else
        base="${TL_DOWNLOAD_BASE:-https://github.com}/$TL_REPO/releases/download/$TL_VERSION"
        if download "$base/$archive" "$tmp/$archive" && download "$base/$archive.sha256" "$tmp/$archive.sha256"; then
            got=https
        fi
    fi
    if [ -n "$got" ]; then
        if ! verify "$tmp" "$archive"; then
            echo "tracelens: error: $archive does not match its published SHA-256; not installed" >&2
            exit 2
        fi
        case "$archive" in
            *.zip) unzip -q -o "$tmp/$archive" -d "$TL_BIN_DIR" ;;
            *) tar -xzf "$tmp/$archive" -C "$TL_BIN_DIR" ;;
        esac
        rm -rf "$tmp"
        echo "tracelens: installed the $TL_VERSION release binary for $target ($got, SHA-256 checked)"
        echo "$TL_BIN_DIR" >> "$GITHUB_PATH"
        exit 0
    fi
    rm -rf "$tmp"
    echo "tracelens: no release binary $archive for $TL_VERSION; building from source"
fi

# The fallback: build the action's checkout (GitHub's runners have cargo; none is installed
# here, and nothing is piped into a shell).
if ! command -v cargo >/dev/null 2>&1; then
    echo "tracelens: error: no prebuilt binary for this runner (${RUNNER_OS:-?} ${RUNNER_ARCH:-?}, ref ${TL_VERSION:-?}) and no cargo to build one; use a release tag (uses: OWNER/tracelens@vX.Y.Z) or install Rust first" >&2
    exit 2
fi
: "${GITHUB_ACTION_PATH:?}"
cargo build --locked --release --manifest-path "$GITHUB_ACTION_PATH/Cargo.toml" -p tracelens-cli \
    --target-dir "$TL_BIN_DIR/.build"
cp "$TL_BIN_DIR/.build/release/$exe" "$TL_BIN_DIR/$exe"
rm -rf "$TL_BIN_DIR/.build"
echo "tracelens: built $("$TL_BIN_DIR/$exe" --version) from source"
echo "$TL_BIN_DIR" >> "$GITHUB_PATH"
