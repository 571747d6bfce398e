#!/usr/bin/env bash
# `make test`: the test stack, verify and the tests.
# The stack (hack/test-stack.sh: a no-op when cached) builds in the background
# while `make verify` runs and then while the tests run: tests wait for the
# binaries they need (test/stack waits while hack/test-stack.sh builds), so on
# a cold machine the API-server tests run while Argo CD still compiles, and
# Argo CD 2.14.21 compiles while the e2e runs on 3.5.1. The tests, in two
# streams at once, each with stacks of its own:
#   e2e:  ./test/e2e on Argo CD 3.5.1, then its E2E_RUN_2_14 subset on 2.14.21
#         (one after the other: every argocd-server on the machine loads the
#         panel its browser test puts into /tmp/extensions);
#   rest: every other package, one at a time (-p 1), on 3.5.1.
# Most of their time is spent waiting for controllers, so running them side by
# side about halves the wall time on 2 cores. Both print as they go, each line
# prefixed with its stream; at the end each failed stream's failed tests are
# repeated (CI shows only the end of a long log). Exit code: 0 when both pass.
set -uo pipefail
cd "$(dirname "$0")/.."
export GITOPS_SERVICE_REQUIRE_STACK=1

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
start=$(date +%s)

# stream NAME CMD...: runs CMD, its output prefixed with [NAME] and kept in
# $logs/NAME.log; its exit code in $logs/NAME.rc.
stream() {
	local name=$1
	shift
	{
		"$@" 2>&1
		echo $? >"$logs/$name.rc"
	} | tee "$logs/$name.log" | sed -u "s/^/[$name] /"
}

e2e() {
	ARGOCD_VERSION=3.5.1 hack/gotest.sh -count=1 -timeout 45m ./test/e2e/...
	local rc=$?
	if [ -n "${E2E_RUN_2_14:-}" ]; then
		ARGOCD_VERSION=2.14.21 hack/gotest.sh -count=1 -timeout 30m -run "$E2E_RUN_2_14" ./test/e2e/... || rc=1
	else
		ARGOCD_VERSION=2.14.21 hack/gotest.sh -count=1 -timeout 30m ./test/e2e/... || rc=1
	fi
	return $rc
}

rest() {
	local pkgs
	pkgs=$(go list ./... | grep -v '/test/e2e$') || return 1
	# shellcheck disable=SC2086 # one argument per package
	ARGOCD_VERSION=3.5.1 hack/gotest.sh -count=1 -timeout 45m -p 1 $pkgs
}

# apt packages first (the stack's builds and the tests both need them).
hack/install-deps.sh || exit 1
stream stack hack/test-stack.sh &
stack_pid=$!
echo "[test] verify (generated files, gofmt, go vet, staticcheck) while the stack builds"
stream verify make verify
if [ "$(cat "$logs/verify.rc")" -ne 0 ]; then
	echo "=== make verify failed (its output is above, prefixed [verify]); the tests were not run"
	builder=$(cat "${GITOPS_SERVICE_CACHE:-$HOME/.cache/gitops-service}/.building" 2>/dev/null) && kill "$builder" 2>/dev/null
	exit 1
fi
echo "[test] two streams: [e2e] Argo CD 3.5.1 then 2.14.21 end to end; [rest] every other package"
stream e2e e2e &
e2e_pid=$!
stream rest rest
wait "$e2e_pid"
wait "$stack_pid"

rc=0
for name in stack rest e2e; do
	code=$(cat "$logs/$name.rc" 2>/dev/null || echo 1)
	if [ "$code" -ne 0 ]; then
		rc=1
		echo
		echo "=== stream $name failed (exit $code). Its failed tests and panics, in order:"
		grep -E -e '--- FAIL|^FAIL|^panic:|test timed out|ERROR' "$logs/$name.log" | head -100
	fi
done
echo "[test] done in $(($(date +%s) - start))s: $([ "$rc" -eq 0 ] && echo passed || echo FAILED)"
[ "$rc" -eq 0 ] || echo "=== each failed test's output is above, prefixed with its stream: search the log for its name. Re-run one with: go test -count=1 -run '<name>' <package>"
exit "$rc"
