#!/usr/bin/env bash
# The tracelens action's sticky PR comment: one comment, found by its marker and updated in
# place on every run, never a new one per push. Inputs in the environment:
#   TL_SUMMARY         the Markdown to post (run.sh's `summary-md` output)
#   GITHUB_REPOSITORY, GITHUB_EVENT_PATH, GH_TOKEN: as the runner sets them (`gh` reads the token)
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
existing="$(gh api --paginate "repos/$GITHUB_REPOSITORY/issues/$pr/comments" \
    --jq ".[] | select(.user.login == \"$author\" and (.body | startswith(\"$marker\"))) | .id" | head -n 1)"
if [ -n "$existing" ]; then
    gh api --method PATCH "repos/$GITHUB_REPOSITORY/issues/comments/$existing" -F "body=@$body" >/dev/null
    echo "tracelens: updated comment $existing on #$pr"
else
    gh api --method POST "repos/$GITHUB_REPOSITORY/issues/$pr/comments" -F "body=@$body" >/dev/null
    echo "tracelens: commented on #$pr"
fi
