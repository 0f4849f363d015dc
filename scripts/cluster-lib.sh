# Sourced by scripts/cluster.sh and scripts/franz-suite.sh: start_cluster starts N sluice
# nodes as one cluster with a static quorum of the nodes that have the controller role.
#   start_cluster N BASE_PORT DATA_DIR [ROLE...]
# ROLE i is node i's process.roles: broker,controller (the default for every node not given),
# controller or broker. Node i (1..N) serves clients on BASE_PORT+2(i-1) and its controller
# listener on the port after it (each only if it has that role), keeps its data in
# DATA_DIR/node-i and logs to DATA_DIR/node-i.log. It sets CLUSTER_PIDS and CLUSTER_SEEDS
# (comma-separated client addresses of the brokers) and returns once every node's port (client,
# or controller for a controller-only node) accepts connections (a broker opens it only after
# the quorum registered it).
start_cluster() {
  local n=$1 base=$2 dir=$3 voters="" i
  shift 3
  local roles=("$@")
  role_of() { echo "${roles[$(($1 - 1))]:-broker,controller}"; }
  for i in $(seq 1 "$n"); do
    case "$(role_of "$i")" in *controller*)
      voters+="${voters:+,}$i@127.0.0.1:$((base + 2 * (i - 1) + 1))" ;;
    esac
  done
  CLUSTER_PIDS=() CLUSTER_SEEDS=""
  mkdir -p "$dir"
  for i in $(seq 1 "$n"); do
    local port=$((base + 2 * (i - 1))) role listeners
    role=$(role_of "$i")
    case "$role" in
      broker,controller) listeners="PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$((port + 1))" ;;
      controller) listeners="CONTROLLER://127.0.0.1:$((port + 1))" ;;
      broker) listeners="PLAINTEXT://127.0.0.1:$port" ;;
      *) echo "node $i: unknown role $role"; return 1 ;;
    esac
    ./bin/sluice --set node.id="$i" --set log.dirs="$dir/node-$i" --set process.roles="$role" \
      --set listeners="$listeners" \
      --set controller.listener.names=CONTROLLER --set controller.quorum.voters="$voters" \
      >>"$dir/node-$i.log" 2>&1 &
    CLUSTER_PIDS+=($!)
    [ "$role" = controller ] || CLUSTER_SEEDS+="${CLUSTER_SEEDS:+,}127.0.0.1:$port"
  done
  for i in $(seq 1 "$n"); do
    local port=$((base + 2 * (i - 1))) tries=0
    [ "$(role_of "$i")" = controller ] && port=$((port + 1))
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
