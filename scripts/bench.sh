#!/usr/bin/env bash
# What `make bench` runs: the Go benchmarks only (no tests), with the browser
# installed when missing, then a short summary of the ratios.
#
#   BenchmarkStepOverhead      Proctor's per-step critical path (act, then
#                              observe) against the floor of the same work
#                              (the scroll, a JPEG screenshot, an aria
#                              snapshot, title and URL by plain Playwright
#                              calls, from Go and from a Node script),
#                              alternated step by step, with a no-op agent on
#                              the sandbox shop
#   BenchmarkEpisodesParallel  5-step no-op episodes per minute at 1, 2 and 4
#                              episodes at a time on one browser
#   BenchmarkRunParallel       the worker's real path (dispatch, claims, steps
#                              and artifacts on SQLite, grading): runs of 12
#                              5-step replay episodes at parallelism 1 and 2,
#                              alternating, on one worker with two slots
#   BenchmarkWebArenaVerifiedEval  WebArena-Verified tasks graded per second on
#                              one core (812 synthetic outputs from the real
#                              specs, demo-sized HARs) against only JSON-decoding
#                              the same inputs, and the official reading against
#                              the lenient one (version 1's), in the same run
#                              (skips without ../shared/data)
#   BenchmarkTimeline200Steps  the timeline page of a 200-step attempt: time
#                              and HTML size
#   BenchmarkEntriesMemory     HARs of 4, 64 and 256 MiB (1 MiB response bodies)
#                              read entry by entry without their bodies: MB/s
#                              and the peak live heap while reading, against
#                              the 4 MiB HAR's in the same run
#   BenchmarkLeaderboardPage   the leaderboard page of 200 published runs,
#                              each with its 812 attempts, against serving a
#                              static file of the page's size, in the same run:
#                              the kept board, the first page after a change
#                              (rendered) and a 304 revalidation
#   BenchmarkIngest            the submission portal on a ~500 MB bundle
#                              (PROCTOR_BENCH_BUNDLE_MB): validation and ingest
#                              MB/s against copying the same bytes into the
#                              artifact store, and each process's peak memory;
#                              run once (-benchtime 1x) when no packages are
#                              named or PROCTOR_BENCH_INGEST=1; each phase in a child
#                              process of its own
#   BenchmarkRecovery          deployments coming back from a process fault,
#                              with the default 45 s lease: serve killed
#                              and started again (SQLite, local folder), a worker
#                              killed and a worker frozen (PostgreSQL and S3, two
#                              workers): seconds until the dead process's claims
#                              are released and until the run goes on, against
#                              the median episode of the same run; run once
#                              (-benchtime 1x), with a throwaway PostgreSQL and
#                              versitygw, when no packages are named or
#                              PROCTOR_BENCH_RECOVERY=1
#   BenchmarkMCPStep           a step driven through the episode's MCP server
#                              (the Go SDK's client over loopback HTTP) against
#                              a step driven by an agent in the process, on the
#                              same browser, episodes alternated
#   BenchmarkWebLoad           the web tier under load: 50 clients for 30 s on
#                              loopback asking for a leaderboard, a run page and
#                              a timeline while a run executes: requests/s,
#                              p50 and p99 latency and errors, on SQLite and on
#                              PostgreSQL with S3; run with BenchmarkRecovery
#
# Usage: scripts/bench.sh [go test flags/packages...]   (default: ./...)
# BENCHTIME sets -benchtime (default 20x: 20 steps for the overhead, 20
# episodes per parallelism; a couple of minutes on 2 cores). BENCHCOUNT sets
# the rounds (-count, default 3; BenchmarkRecovery runs once): every figure
# is the median of its rounds.
#
# Writes bench.json (BENCHJSON): every figure's median and samples, the load
# average before and after, and each goal with its value and whether it is
# met (cmd/benchreport holds the goals); prints the goals after the summary.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

export CGO_ENABLED=0

step() { printf '\n==> %s\n' "$*"; }

step "deps"
# web: the binary embeds static/vendor, so packages do not compile without it.
scripts/deps.sh web browser

# Fail rather than skip: a benchmark run without the browser measures nothing.
export PROCTOR_TEST_REQUIRE=browser
export PLAYWRIGHT_DRIVER_PATH=$root/.cache/playwright-driver
export PROCTOR_CHROMIUM_PATH=/usr/bin/chromium
echo "PLAYWRIGHT_DRIVER_PATH=$PLAYWRIGHT_DRIVER_PATH PROCTOR_CHROMIUM_PATH=$PROCTOR_CHROMIUM_PATH"

log=$(mktemp "${TMPDIR:-/tmp}/proctor-bench.XXXXXX")
medians=$(mktemp "${TMPDIR:-/tmp}/proctor-bench-medians.XXXXXX")
trap 'rm -f "$log" "$medians"' EXIT
rounds=${BENCHCOUNT:-3}

step "go test -bench"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
echo "$(nproc) CPUs; load average (1, 5, 15 min) before: $load_before"
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(./...)
set +e
go test -run '^$' -bench . -skip '^(BenchmarkIngest|BenchmarkRecovery|BenchmarkWebLoad)$' -benchtime="${BENCHTIME:-20x}" -count="$rounds" -benchmem -timeout 20m "${args[@]}" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
if [ "$status" -eq 0 ] && { [ $# -eq 0 ] || [ -n "${PROCTOR_BENCH_INGEST:-}" ]; }; then
	go test -run '^$' -bench '^BenchmarkIngest$' -benchtime=1x -count="$rounds" -timeout 20m ./runner/ 2>&1 | tee -a "$log"
	status=${PIPESTATUS[0]}
fi
if [ "$status" -eq 0 ] && { [ $# -eq 0 ] || [ -n "${PROCTOR_BENCH_RECOVERY:-}" ]; }; then
	scripts/deps.sh postgres versitygw
	svc=$(mktemp -d "${TMPDIR:-/tmp}/proctor-bench-svc.XXXXXX")
	chmod 755 "$svc" # the PostgreSQL server runs as user postgres
	trap 'scripts/versitygw.sh stop "$svc/s3"; scripts/postgres.sh stop "$svc/pg"; rm -rf "$svc" "$log" "$medians"' EXIT
	eval "$(scripts/postgres.sh start "$svc/pg")"
	eval "$(scripts/versitygw.sh start "$svc/s3")"
	export PROCTOR_TEST_DATABASE_URL PROCTOR_TEST_S3_ENDPOINT PROCTOR_TEST_S3_ACCESS_KEY PROCTOR_TEST_S3_SECRET_KEY
	PROCTOR_TEST_REQUIRE=browser,postgres,s3 go test -run '^$' -bench '^BenchmarkRecovery$' -benchtime=1x -timeout 30m ./cmd/proctor/ 2>&1 | tee -a "$log"
	status=${PIPESTATUS[0]}
	if [ "$status" -eq 0 ]; then
		PROCTOR_TEST_REQUIRE=browser,postgres,s3 go test -run '^$' -bench '^BenchmarkWebLoad$' -benchtime=1x -count="$rounds" -timeout 30m ./cmd/proctor/ 2>&1 | tee -a "$log"
		status=${PIPESTATUS[0]}
	fi
fi
set -e
if [ "$status" -ne 0 ]; then
	echo FAIL
	exit "$status"
fi

load_after=$(cut -d' ' -f1-3 /proc/loadavg)
step "summary (medians of $rounds rounds)"
report=$(go run ./cmd/benchreport -o "${BENCHJSON:-bench.json}" -medians "$medians" -load-before "$load_before" -load-after "$load_after" "$log")
# Each result line is "BenchmarkName-PROCS  N  value unit  value unit ...":
# the awk keys every value by the name (without -PROCS) and its unit.
awk '
	/^Benchmark/ {
		name = $1
		sub(/-[0-9]+$/, "", name)
		for (i = 4; i <= NF; i += 2) v[name, $i] = $(i - 1)
		names[name] = 1
	}
	function has(n, u) { return ((n, u) in v) }
	END {
		s = "BenchmarkStepOverhead"
		if (has(s, "x-floor")) {
			print "Per step, no-op agent on the sandbox shop (ms/step):"
			printf "  %-46s %8.1f\n", "floor (playwright-go): act + observe", v[s, "floor-ms/step"]
			printf "  %-46s %8.1f\n", "  screenshot", v[s, "floor-shot-ms"]
			printf "  %-46s %8.1f\n", "  aria snapshot", v[s, "floor-aria-ms"]
			printf "  %-46s %8.1f\n", "  title + URL", v[s, "floor-meta-ms"]
			printf "  %-46s %8.1f\n", "  move + wheel", v[s, "floor-act-ms"]
			if (has(s, "node-ms/step")) {
				printf "  %-46s %8.1f\n", "floor from a plain Node script", v[s, "node-ms/step"]
				printf "  %-46s %7.2fx\n", "Go client: Go floor / Node floor", v[s, "floor-x-node"]
			}
			printf "  %-46s %8.1f\n", "Proctor critical path: act + observe", v[s, "proctor-ms/step"]
			printf "  %-46s %8.1f\n", "  observe", v[s, "observe-ms/step"]
			printf "  %-46s %8.1f\n", "  act (scroll, wait for DOM)", v[s, "act-ms/step"]
			if (has(s, "persist-ms/step"))
				printf "  %-46s %8.1f\n", "  persist (beside the agent, off the path)", v[s, "persist-ms/step"]
			printf "  %-46s %7.2fx\n", "step: Proctor / floor", v[s, "x-floor"]
			if (has(s, "x-strict-floor"))
				printf "  %-46s %7.2fx\n", "step: Proctor / floor with axtree.js", v[s, "x-strict-floor"]
		}
		p = "BenchmarkEpisodesParallel/parallel="
		if (has(p "1", "episodes/min")) {
			print ""
			print "5-step no-op episodes on one browser:"
			printf "  %-10s %14s %10s %12s %12s\n", "parallel", "episodes/min", "speed-up", "busy cores", "CPU bound"
			for (k = 1; k <= 4; k *= 2) {
				if (has(p k, "episodes/min"))
					printf "  %-10s %14.1f %9.2fx %12.2f %11.2fx\n", k, v[p k, "episodes/min"], v[p k, "x-parallel=1"], v[p k, "cores-busy"], v[p k, "x-cpu-bound"]
			}
		}
		rp = "BenchmarkRunParallel"
		if (has(rp, "x-parallel=1")) {
			print ""
			print "5-step replay runs through the worker (SQLite, one worker, two slots):"
			printf "  %-46s %8.1f\n", "parallelism 1 (episodes/min)", v[rp, "p1-episodes/min"]
			printf "  %-46s %8.1f\n", "parallelism 2 (episodes/min)", v[rp, "p2-episodes/min"]
			printf "  %-46s %7.2fx\n", "speed-up", v[rp, "x-parallel=1"]
			if (has(rp, "x-cpu-bound")) {
				printf "  %-46s %8.2f\n", "busy cores at parallelism 1", v[rp, "p1-cores-busy"]
				printf "  %-46s %7.2fx\n", "CPU bound on the speed-up", v[rp, "x-cpu-bound"]
			}
		}
		w = "BenchmarkWebArenaVerifiedEval"
		if (has(w, "tasks/s")) {
			print ""
			print "WebArena-Verified evaluation, 812 synthetic outputs, one core:"
			printf "  %-46s %8.1f\n", "graded (tasks/s)", v[w, "tasks/s"]
			printf "  %-46s %8.1f\n", "baseline: JSON-decoding the inputs (tasks/s)", v[w, "baseline-tasks/s"]
			printf "  %-46s %7.2fx\n", "grading speed / decoding speed", v[w, "x-baseline"]
			if (has(w, "x-lenient")) {
				printf "  %-46s %8.1f\n", "lenient reading of version 1 (tasks/s)", v[w, "lenient-tasks/s"]
				printf "  %-46s %7.2fx\n", "official reading speed / lenient speed", v[w, "x-lenient"]
			}
		}
		l = "BenchmarkLeaderboardPage"
		if (has(l, "x-static")) {
			print ""
			print "Leaderboard page, 200 published runs of 812 tasks, served in-process:"
			printf "  %-46s %8.2f\n", "page, router to last byte (ms)", v[l, "page-ms"]
			printf "  %-46s %8.2f\n", "static file of the same size (ms)", v[l, "static-ms"]
			printf "  %-46s %8.1f\n", "page size (KiB)", v[l, "page-KiB"]
			printf "  %-46s %7.2fx\n", "page time / static file time", v[l, "x-static"]
			if (has(l, "miss-ms")) {
				printf "  %-46s %8.2f\n", "first page after a change, rendered (ms)", v[l, "miss-ms"]
				printf "  %-46s %7.2fx\n", "first page after a change / static file", v[l, "x-static-miss"]
				printf "  %-46s %8.3f\n", "revalidation of a current copy, 304 (ms)", v[l, "304-ms"]
			}
		}
		tl = "BenchmarkTimeline200Steps"
		if (has(tl, "ns/op")) {
			print ""
			print "Timeline page of a 200-step attempt, served in-process:"
			printf "  %-46s %8.2f\n", "page, router to last byte (ms)", v[tl, "ns/op"] / 1e6
			printf "  %-46s %8.1f\n", "HTML size (KiB)", v[tl, "html-bytes"] / 1024
		}
		h = "BenchmarkEntriesMemory/"
		if (has(h "4MiB", "peak-heap-MiB")) {
			print ""
			print "HAR read entry by entry without its bodies (1 MiB response bodies):"
			printf "  %-10s %10s %18s %12s\n", "HAR", "MB/s", "peak heap (MiB)", "÷ 4 MiB HAR"
			split("4MiB 64MiB 256MiB", sizes, " ")
			for (k = 1; k <= 3; k++) {
				n = h sizes[k]
				if (has(n, "peak-heap-MiB"))
					printf "  %-10s %10.1f %18.2f %11.2fx\n", sizes[k], v[n, "MB/s"], v[n, "peak-heap-MiB"], v[n, "x-4MiB"]
			}
		}
		g = "BenchmarkIngest"
		if (has(g, "copy-MB/s")) {
			print ""
			printf "Submission portal, a %.0f MB Proctor trajectory bundle (1280x720 JPEG screenshots, HARs):\n", v[g, "bundle-MB"]
			printf "  %-46s %8.1f\n", "copy into the artifact store (MB/s)", v[g, "copy-MB/s"]
			printf "  %-46s %8.1f\n", "validate: hash, inspect, store files (MB/s)", v[g, "validate-MB/s"]
			printf "  %-46s %8.1f\n", "ingest: create the run from the plan (MB/s)", v[g, "ingest-MB/s"]
			printf "  %-46s %7.2fx\n", "ingest time / copy time", v[g, "ingest-x-copy"]
			printf "  %-46s %7.2fx\n", "validate + ingest time / copy time", v[g, "total-x-copy"]
			printf "  %-46s %8.1f\n", "peak memory of the ingesting process (MiB)", v[g, "ingest-peak-MB"]
			printf "  %-46s %8.1f\n", "peak memory of the copying process (MiB)", v[g, "copy-peak-MB"]
		}
		mc = "BenchmarkMCPStep"
		if (has(mc, "x-driven")) {
			print ""
			print "A step driven through the episode'"'"'s MCP server (Go SDK client over HTTP) vs in the process:"
			printf "  %-46s %8.1f\n", "driven step, agent in the process (ms)", v[mc, "driven-ms/step"]
			printf "  %-46s %8.1f\n", "MCP step: tool call, action, snapshot (ms)", v[mc, "mcp-ms/step"]
			printf "  %-46s %7.2fx\n", "MCP step / driven step", v[mc, "x-driven"]
		}
		wl = "BenchmarkWebLoad/"
		if (has(wl "sqlite", "req/s") || has(wl "postgres", "req/s")) {
			print ""
			print "Web tier under load (leaderboard, run page, timeline; a run executing):"
			printf "  %-10s %10s %10s %10s %8s\n", "database", "req/s", "p50 (ms)", "p99 (ms)", "errors"
			split("sqlite postgres", dbs, " ")
			for (k = 1; k <= 2; k++) {
				n = wl dbs[k]
				if (has(n, "req/s"))
					printf "  %-10s %10.1f %10.1f %10.1f %8d\n", dbs[k], v[n, "req/s"], v[n, "p50-ms"], v[n, "p99-ms"], v[n, "errors"]
			}
		}
		r = "BenchmarkRecovery/"
		split("serve-killed-and-restarted worker-killed worker-frozen", faults, " ")
		if (has(r faults[1], "continued-s") || has(r faults[3], "continued-s")) {
			print ""
			print "Recovery from a process fault (default lease: 45 s):"
			printf "  %-28s %12s %12s %12s %12s\n", "fault", "released (s)", "went on (s)", "episode (s)", "÷ episode"
			for (k = 1; k <= 3; k++) {
				n = r faults[k]
				if (has(n, "continued-s"))
					printf "  %-28s %12.1f %12.1f %12.1f %11.2fx\n", faults[k], v[n, "released-s"], v[n, "continued-s"], v[n, "episode-s"], v[n, "continued-x-episode"]
			}
		}
	}
' "$medians"
echo
echo "Goals:"
echo "$report"
echo
echo "$(nproc) CPUs; load average (1, 5, 15 min) before: $load_before, after: $load_after"
echo "bench.json: ${BENCHJSON:-bench.json}"
echo "(other work on the machine skews these figures; Proctor's step timings are stored in whole ms)"
