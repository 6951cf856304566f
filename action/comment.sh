#!/usr/bin/env bash
# The tracelens action's sticky PR comment: one comment, found by its marker and updated in
# place on every run, never a new one per push. Inputs in the environment:
#   TL_SUMMARY         the Markdown to post (run.sh's `summary-md` output)
#   GITHUB_REPOSITORY, GITHUB_EVENT_PATH, GH_TOKEN: as the runner sets them (`gh` reads the
#                      token; without `gh`, curl sends it to GITHUB_API_URL)
#   TL_COMMENT_AUTHOR  the login that posts (default github-actions[bot], the GITHUB_TOKEN's):
#                      only its own comment is updated, never one that merely starts with the
#                      marker (anyone can write that)
set -euo pipefail
: "${TL_SUMMARY:?}" "${GITHUB_REPOSITORY:?}" "${GITHUB_EVENT_PATH:?}"
marker='<!-- tracelens-sticky-comment -->'
author="${TL_COMMENT_AUTHOR:-github-actions[bot]}"
case "$author" in
    *[!A-Za-z0-9\[\]-]*) echo "tracelens: TL_COMMENT_AUTHOR is not a GitHub login: $author" >&2; exit 2 ;;
esac
pr="$(python3 -c 'import json,sys; e=json.load(open(sys.argv[1])); print((e.get("pull_request") or {}).get("number") or "")' "$GITHUB_EVENT_PATH")"
if [ -z "$pr" ]; then
    echo "tracelens: not a pull request event: no comment posted"
    exit 0
fi
body="$(mktemp)"
{ echo "$marker"; cat "$TL_SUMMARY"; } > "$body"
# With `gh` where the runner has it; else GitHub's REST API over curl (a bare self-hosted
# runner), with the same token.
api="${GITHUB_API_URL:-https://api.github.com}"
rest() { # METHOD PATH [BODY_FILE]: prints the response body
    local args=(-fsSL --retry 3 -X "$1" -H "Accept: application/vnd.github+json" -H "Authorization: Bearer ${GH_TOKEN:?GH_TOKEN is needed to comment}")
    [ -n "${3:-}" ] && args+=(-H "Content-Type: application/json" --data-binary "@$3")
    curl "${args[@]}" "$api/$2"
}
if command -v gh >/dev/null 2>&1; then
    existing="$(gh api --paginate "repos/$GITHUB_REPOSITORY/issues/$pr/comments" \
        --jq ".[] | select(.user.login == \"$author\" and (.body | startswith(\"$marker\"))) | .id" | head -n 1)"
else
    existing=""
    page=1
    while [ -z "$existing" ]; do
        listing="$(mktemp)"
        rest GET "repos/$GITHUB_REPOSITORY/issues/$pr/comments?per_page=100&page=$page" > "$listing"
        # "ID" of the bot's own comment; "" with "more" when this page was full; "" alone at the end.
        found="$(python3 - "$listing" "$author" "$marker" <<'PY'
import json, sys
comments = json.load(open(sys.argv[1], encoding="utf-8"))
for c in comments:
    if (c.get("user") or {}).get("login") == sys.argv[2] and (c.get("body") or "").startswith(sys.argv[3]):
        print(c["id"])
        break
else:
    print("more" if len(comments) == 100 else "")
PY
)"
        rm -f "$listing"
        case "$found" in
            more) page=$((page + 1)) ;;
            "") break ;;
            *) existing="$found" ;;
        esac
    done
fi
if command -v gh >/dev/null 2>&1; then
    if [ -n "$existing" ]; then
        gh api --method PATCH "repos/$GITHUB_REPOSITORY/issues/comments/$existing" -F "body=@$body" >/dev/null
    else
        gh api --method POST "repos/$GITHUB_REPOSITORY/issues/$pr/comments" -F "body=@$body" >/dev/null
    fi
else
    payload="$(mktemp)"
    python3 -c 'import json,sys; json.dump({"body": open(sys.argv[1], encoding="utf-8").read()}, open(sys.argv[2], "w"))' "$body" "$payload"
    if [ -n "$existing" ]; then
        rest PATCH "repos/$GITHUB_REPOSITORY/issues/comments/$existing" "$payload" >/dev/null
    else
        rest POST "repos/$GITHUB_REPOSITORY/issues/$pr/comments" "$payload" >/dev/null
    fi
    rm -f "$payload"
fi
if [ -n "$existing" ]; then
    echo "tracelens: updated comment $existing on #$pr"
else
    echo "tracelens: commented on #$pr"
fi
