#!/usr/bin/env bash
# Runs the chaos suite (test/chaos) RUNS times, PARALLEL at a time, each run
# with its own API server and sidecars, and prints each verdict and the pass
# rate. N is the number of GitOpsDeployments per chaos round.
set -euo pipefail
runs=${RUNS:-10} parallel=${PARALLEL:-1} n=${N:-100}
logs=$(mktemp -d /tmp/gitops-chaos-XXXXXX)
echo "chaos: building the suite; $runs runs, $parallel at a time, N=$n; logs in $logs"
go test -c -o "$logs/chaos.test" ./test/chaos/
export logs runs n
one() {
	local i=$1 start verdict
	start=$(date +%s)
	if (cd test/chaos && GITOPS_SERVICE_REQUIRE_STACK=1 "$logs/chaos.test" -test.count=1 -test.timeout=20m -chaos-n="$n") >"$logs/run-$i.log" 2>&1; then
		verdict=passed
	else
		verdict="FAILED (log: $logs/run-$i.log)"
	fi
	echo "$verdict" >"$logs/run-$i.verdict"
	echo "chaos run $i/$runs $verdict in $(($(date +%s) - start))s ($(grep -lx passed "$logs"/*.verdict | wc -l)/$(ls "$logs"/*.verdict | wc -l) passed so far)"
}
export -f one
seq 1 "$runs" | xargs -P "$parallel" -I{} bash -c 'one {}'
pass=$(grep -lx passed "$logs"/*.verdict | wc -l)
echo "chaos: $pass/$runs runs passed ($((100 * pass / runs))%), $parallel at a time, N=$n; logs in $logs"
[ "$pass" -eq "$runs" ]
