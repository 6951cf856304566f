#!/usr/bin/env bash
# The tracelens action's sticky PR comment: one comment, found by its marker and updated in
# place on every run, never a new one per push. Inputs in the environment:
#   TL_SUMMARY         the Markdown to post (run.sh's `summary-md` output)
#   GITHUB_REPOSITORY, GITHUB_EVENT_PATH, GH_TOKEN: as the runner sets them (`gh` reads the token)
set -euo pipefail
: "${TL_SUMMARY:?}" "${GITHUB_REPOSITORY:?}" "${GITHUB_EVENT_PATH:?}"
marker='<!-- tracelens-sticky-comment -->'
pr="$(python3 -c 'import json,sys; e=json.load(open(sys.argv[1])); print((e.get("pull_request") or {}).get("number") or "")' "$GITHUB_EVENT_PATH")"
if [ -z "$pr" ]; then
    echo "tracelens: not a pull request event: no comment posted"
    exit 0
fi
body="$(mktemp)"
{ echo "$marker"; cat "$TL_SUMMARY"; } > "$body"
existing="$(gh api --paginate "repos/$GITHUB_REPOSITORY/issues/$pr/comments" \
    --jq ".[] | select(.body | startswith(\"$marker\")) | .id" | head -n 1)"
if [ -n "$existing" ]; then
    gh api --method PATCH "repos/$GITHUB_REPOSITORY/issues/comments/$existing" -F "body=@$body" >/dev/null
    echo "tracelens: updated comment $existing on #$pr"
else
    gh api --method POST "repos/$GITHUB_REPOSITORY/issues/$pr/comments" -F "body=@$body" >/dev/null
    echo "tracelens: commented on #$pr"
fi
