# Sourced by scripts/cluster.sh and scripts/franz-suite.sh: start_cluster starts N combined
# sluice nodes (broker and controller) as one cluster with a static quorum of all of them.
#   start_cluster N BASE_PORT DATA_DIR
# Node i (1..N) serves clients on BASE_PORT+2(i-1) and its controller listener on the port
# after it, keeps its data in DATA_DIR/node-i and logs to DATA_DIR/node-i.log. It sets
# CLUSTER_PIDS and CLUSTER_SEEDS (comma-separated client addresses) and returns once every
# node's client port accepts connections (a node opens it only after the quorum registered it).
start_cluster() {
  local n=$1 base=$2 dir=$3 voters="" i
  for i in $(seq 1 "$n"); do
    voters+="${voters:+,}$i@127.0.0.1:$((base + 2 * (i - 1) + 1))"
  done
  CLUSTER_PIDS=() CLUSTER_SEEDS=""
  mkdir -p "$dir"
  for i in $(seq 1 "$n"); do
    local port=$((base + 2 * (i - 1)))
    ./bin/sluice --set node.id="$i" --set log.dirs="$dir/node-$i" \
      --set listeners="PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$((port + 1))" \
      --set controller.listener.names=CONTROLLER --set controller.quorum.voters="$voters" \
      >>"$dir/node-$i.log" 2>&1 &
    CLUSTER_PIDS+=($!)
    CLUSTER_SEEDS+="${CLUSTER_SEEDS:+,}127.0.0.1:$port"
  done
  for i in $(seq 1 "$n"); do
    local port=$((base + 2 * (i - 1))) tries=0
    until (exec 3<>/dev/tcp/127.0.0.1/"$port") 2>/dev/null; do
      if ! kill -0 "${CLUSTER_PIDS[$((i - 1))]}" 2>/dev/null; then
        tail -20 "$dir/node-$i.log"; echo "node $i exited"; return 1
      fi
      tries=$((tries + 1))
      if [ "$tries" -gt 600 ]; then echo "node $i did not open port $port within 60 s"; return 1; fi
      sleep 0.1
    done
  done
}

# stop_cluster sends SIGTERM to every node and waits for them.
stop_cluster() {
  local pid
  for pid in "${CLUSTER_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${CLUSTER_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
}
