#!/usr/bin/env bash
# Runs franz-go's own live-broker tests (github.com/twmb/franz-go/pkg/kgo) against a fresh
# sluice process on a free port (FRANZ_NODES=3: a cluster of three). The first argument is the -run pattern; with none, the whole
# suite, share groups (KIP-932) included; FRANZ_SKIP skips a pattern. One
# node also gets a SASL_PLAINTEXT listener with SCRAM (a SCRAM-SHA-512 user created with `sluice user
# set-scram`) and one validating OAUTHBEARER tokens as Kafka's default (unsecured) validator
# does, for TestSCRAMAuth* and TestOAuthAuth (KGO_TEST_SCRAM*, KGO_TEST_OAUTH_SEEDS); a
# cluster run skips those (the Makefile's FRANZ_CLUSTER_SKIP); the share-group tests run on a
# cluster too (share partitions on their leaders, their state on the share coordinator).
set -euo pipefail
cd "$(dirname "$0")/.."
PATTERN="${1:-.}"
SKIP="${FRANZ_SKIP:-^$}"
TIMEOUT="${FRANZ_TIMEOUT:-600s}"

go build -o bin/sluice ./cmd/sluice
DATA=$(mktemp -d)
NODES="${FRANZ_NODES:-1}"
if [ "$NODES" -gt 1 ]; then
  # A cluster of combined nodes (scripts/cluster-lib.sh) on free ports.
  . scripts/cluster-lib.sh
  trap 'stop_cluster; [ -n "${KEEP_DATA:-}" ] || rm -rf "$DATA"' EXIT
  # Ports are picked at random below the kernel's ephemeral range; another process on this
  # machine may still hold one, so a start that loses a node is retried on other ports.
  for attempt in 1 2 3; do
    BASE=$(python3 -c 'import random; print(random.randrange(20000, 32000, 20))')
    if start_cluster "$NODES" "$BASE" "$DATA"; then break; fi
    stop_cluster
    [ "$attempt" -lt 3 ] || { echo "could not start a cluster of $NODES"; exit 1; }
    rm -rf "$DATA"/node-*
  done
  SEEDS="$CLUSTER_SEEDS"
  LOGS="$DATA/node-*.log"
else
  read -r PORT OAUTH_PORT SCRAM_PORT < <(python3 -c 'import socket
ss=[socket.socket() for _ in range(3)]
[s.bind(("127.0.0.1",0)) for s in ss]
print(*[s.getsockname()[1] for s in ss])')
  ./bin/sluice --set log.dirs="$DATA" \
    --set listeners="PLAINTEXT://127.0.0.1:$PORT,OAUTH://127.0.0.1:$OAUTH_PORT,SCRAM://127.0.0.1:$SCRAM_PORT" \
    --set listener.security.protocol.map=PLAINTEXT:PLAINTEXT,OAUTH:SASL_PLAINTEXT,SCRAM:SASL_PLAINTEXT \
    --set listener.name.oauth.sasl.enabled.mechanisms=OAUTHBEARER \
    --set "listener.name.oauth.oauthbearer.sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;" \
    --set listener.name.scram.sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512 \
    --set "listener.name.scram.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;" \
    >"$DATA/sluice.log" 2>&1 &
  PID=$!
  cleanup() { kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; [ -n "${KEEP_DATA:-}" ] || rm -rf "$DATA"; }
  trap cleanup EXIT
  for _ in $(seq 1 100); do
    if (exec 3<>/dev/tcp/127.0.0.1/"$PORT") 2>/dev/null; then break; fi
    if ! kill -0 "$PID" 2>/dev/null; then cat "$DATA/sluice.log"; echo "sluice exited"; exit 1; fi
    sleep 0.1
  done
  SEEDS="127.0.0.1:$PORT"
  export KGO_TEST_OAUTH_SEEDS="127.0.0.1:$OAUTH_PORT"
  echo franz-suite-secret | ./bin/sluice user set-scram franz --mechanism SCRAM-SHA-512 --brokers "$SEEDS"
  export KGO_TEST_SCRAM_SEEDS="127.0.0.1:$SCRAM_PORT" KGO_TEST_SCRAM="franz:franz-suite-secret:512"
  LOGS="$DATA/sluice.log"
fi
status=0
KGO_SEEDS="$SEEDS" KGO_TEST_RF="${FRANZ_RF:-1}" go test -count=1 -timeout "$TIMEOUT" -run "$PATTERN" -skip "$SKIP" github.com/twmb/franz-go/pkg/kgo -v 2>&1 | tee "$DATA/franz.log" | grep -E "^(=== RUN|--- |PASS|FAIL|ok|panic|    )" || status=$?
if grep -qE '^(FAIL|--- FAIL|panic)' "$DATA/franz.log"; then
  echo "franz-go suite failed; sluice log tail:"; tail -n 50 $LOGS; exit 1
fi
grep -qE '^ok' "$DATA/franz.log" || { echo "franz-go suite did not finish"; tail -50 "$DATA/franz.log"; exit 1; }
