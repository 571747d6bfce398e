#!/usr/bin/env bash
# Runs `go test "$@"`, printing as it goes, and on failure repeats the names of
# the failed tests (and any panic) at the end: CI shows only the end of a long log.
set -uo pipefail
log=$(mktemp)
trap 'rm -f "$log"' EXIT
go test "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
if [ "$rc" -ne 0 ]; then
	echo
	echo "=== go test $* failed (exit $rc). Failed tests and panics, in order:"
	grep -E -e '--- FAIL|^FAIL|^panic:|test timed out' "$log" | head -100
	echo "=== each one's output is above: search the log for its name. Re-run one with: go test -count=1 -run '<name>' <package>"
fi
exit "$rc"
