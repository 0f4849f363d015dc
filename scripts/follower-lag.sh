#!/bin/bash
# Follower lag under load: 3 sluice nodes (RF3 topic, 3 partitions, one led by each node), loadgen
# producing (full speed or -rate), /metrics of every node scraped in turn with 100 ms pauses
# (about one round a second under load).
# usage: scripts/follower-lag.sh [ACKS all|1] [DURATION 30s] [RATE records/s, 0: full speed]
# after: go build -o bin/sluice ./cmd/sluice && go build -o bin/loadgen ./bench/loadgen
# SETTINGS="key=value ..." are passed to every node as --set.
# Prints median, p99 and max over the samples of the lag metrics (ms for the _seconds one).
set -u
ACKS=${1:-all}; DUR=${2:-30s}; RATE=${3:-0}
BIN=${BIN:-$PWD/bin}; W=${TMPDIR:-/tmp}/follower-lag-$ACKS-$RATE; rm -rf $W; mkdir -p $W
VOTERS="1@127.0.0.1:19191,2@127.0.0.1:19192,3@127.0.0.1:19193"
pids=()
for i in 1 2 3; do
  $BIN/sluice --set node.id=$i --set log.dirs=$W/n$i --set "listeners=PLAINTEXT://127.0.0.1:1909$i,CONTROLLER://127.0.0.1:1919$i" \
    --set controller.listener.names=CONTROLLER --set controller.quorum.voters=$VOTERS $(for kv in ${SETTINGS:-}; do printf -- '--set %s ' "$kv"; done) --http-addr 127.0.0.1:1964$i >$W/n$i.log 2>&1 &
  pids+=($!)
done
trap 'kill ${pids[@]} 2>/dev/null; wait' EXIT
B=127.0.0.1:19091,127.0.0.1:19092,127.0.0.1:19093
for t in $(seq 1 60); do $BIN/sluice cluster info --brokers $B >/dev/null 2>&1 && break; sleep 0.5; done
$BIN/sluice topic create lag -p 3 -r 3 -c min.insync.replicas=2 --brokers $B >/dev/null || exit 1
until $BIN/sluice cluster health --brokers $B >/dev/null 2>&1; do sleep 0.5; done
( while true; do
    for i in 1 2 3; do
      curl -s 127.0.0.1:1964$i/metrics | grep -E '^sluice_(partition_replica_lag_records|partition_replica_time_since_caught_up_seconds|replica_fetcher_lag_records)\{' | sed "s/^/$(date +%s.%N) n$i /"
    done
    sleep 0.1
  done ) >$W/samples.txt &
SAMPLER=$!
$BIN/loadgen produce -brokers $B -topic lag -producers 4 -size 1024 -acks $ACKS -duration $DUR -e2e=false -rate $RATE | tee $W/loadgen.txt
kill $SAMPLER
python3 - $W/samples.txt <<'PY'
import sys, statistics, re
series = {}
for line in open(sys.argv[1]):
    parts = line.split()
    if len(parts) != 4: continue
    name = parts[2].split('{')[0]
    series.setdefault(name, []).append(float(parts[3]))
for name, vals in sorted(series.items()):
    scale, unit = (1000, 'ms') if name.endswith('_seconds') else (1, 'records')
    vals = [v*scale for v in vals if v >= 0]
    vals.sort()
    print(f"{name}: n={len(vals)} median={statistics.median(vals):.1f} p99={vals[int(len(vals)*0.99)-1]:.1f} max={vals[-1]:.1f} {unit}")
PY
