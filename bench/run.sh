#!/usr/bin/env bash
# Runs sluice against Apache Kafka 4.4.0 (KAFKA_VERSION) on this machine and writes bench/results/<date>.md and
# .png. BENCH_QUICK=1 makes a smoke run of a few minutes; the full run takes about half an hour.
# Extra arguments go to `loadgen all` (e.g. -brokers sluice -modes default).
set -euo pipefail
cd "$(dirname "$0")/.."
GO="${GO:-go}"

# What the run needs: java (Kafka), python3 with matplotlib (the plot), perf (sluice's profile).
need=()
command -v java >/dev/null || need+=(openjdk-17-jre-headless)
/usr/bin/python3 -c 'import matplotlib' 2>/dev/null || need+=(python3-matplotlib)
command -v perf >/dev/null || need+=(linux-perf)
if [ ${#need[@]} -gt 0 ]; then
  echo "bench: installing ${need[*]}" >&2
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null || echo "bench: could not install ${need[*]}; continuing without" >&2
fi

lib="$(KAFKA_VERSION="${KAFKA_VERSION:-4.4.0}" scripts/fetch-kafka.sh)"
$GO build -o bin/sluice ./cmd/sluice
$GO build -o bin/loadgen ./bench/loadgen

args=(-kafka-lib "$lib" -sluice-bin bin/sluice -out bench/results -plot bench/plot.py
      -workdir "${BENCH_WORKDIR:-${TMPDIR:-/tmp}/sluice-bench}")
if [ -n "${BENCH_QUICK:-}" ] && [ "${BENCH_QUICK}" != 0 ]; then
  args+=(-quick)
fi
# The plot uses Debian's python3 (where apt puts matplotlib), not a pyenv shim.
PATH="/usr/bin:$PATH" bin/loadgen all "${args[@]}" "$@"
# The cost of sluice's metrics (/metrics served and scraped every second, against no HTTP
# listener at all), on the produce rows.
bin/loadgen overhead -sluice-bin bin/sluice -workdir "${BENCH_WORKDIR:-${TMPDIR:-/tmp}/sluice-bench}/overhead" \
  -out "bench/results/$(date -u +%F)-metrics-overhead.md"
# The same cost bounded without the machine's noise: the per-request observation alone against
# one produce request through the handler and the log (in-process benchmarks, 6 runs each).
overhead_md="bench/results/$(date -u +%F)-metrics-overhead.md"
{
  printf '\nIn-process bound (`go test -run ^$ -bench ... -count 6`): the per-request cost of --http-addr (BenchmarkRequestObserve) against one 16 KiB produce request (BenchmarkProduce):\n\n```\n'
  $GO test -run '^$' -bench 'BenchmarkRequestObserve' -count 6 ./ops/ | grep '^Benchmark'
  $GO test -run '^$' -bench 'BenchmarkProduce$' -count 6 ./broker/ | grep '^Benchmark'
  printf '```\n'
} >> "$overhead_md"
