#!/usr/bin/env bash
# make cluster: a local three-node sluice cluster (combined broker+controller nodes) on
# 127.0.0.1:9092, 9094 and 9096 (controllers on 9093, 9095, 9097), data under ./data/node-N.
# CLUSTER_LAYOUT=5: three controller-only nodes (controllers on 9093, 9095, 9097) and two
# broker-only nodes (clients on 9098 and 9100). Ctrl-C (or SIGTERM) stops every node cleanly.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/cluster-lib.sh
NODES="${NODES:-3}"
BASE_PORT="${BASE_PORT:-9092}"
DATA="${DATA:-./data}"
trap 'stop_cluster; exit 0' INT TERM
ROLES=()
if [ "${CLUSTER_LAYOUT:-3}" = 5 ]; then
  NODES=5 ROLES=(controller controller controller broker broker)
fi
start_cluster "$NODES" "$BASE_PORT" "$DATA" "${ROLES[@]}"
echo "sluice cluster of $NODES nodes is up: bootstrap servers $CLUSTER_SEEDS"
echo "  kcat -b $CLUSTER_SEEDS -L"
echo "  logs: $DATA/node-N.log; Ctrl-C stops the cluster"
wait
