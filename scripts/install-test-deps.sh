#!/usr/bin/env bash
# Installs everything the test suite needs on a fresh machine: Debian packages (kcat,
# librdkafka's and kafka-python's Python clients), Go modules, and Apache Kafka's jars (cached
# outside the repository by fetch-kafka.sh). Idempotent and quiet when all is present.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v kcat >/dev/null 2>&1 || need_apt+=(kcat)
/usr/bin/python3 -c "import confluent_kafka" >/dev/null 2>&1 || need_apt+=(python3-confluent-kafka)
/usr/bin/python3 -c "import kafka" >/dev/null 2>&1 || need_apt+=(python3-kafka)
# kafka-python's snappy, zstd and lz4 codecs are separate modules (compat-tests/matrix produces with them).
/usr/bin/python3 -c "import snappy" >/dev/null 2>&1 || need_apt+=(python3-snappy)
/usr/bin/python3 -c "import zstandard" >/dev/null 2>&1 || need_apt+=(python3-zstandard)
/usr/bin/python3 -c "import lz4" >/dev/null 2>&1 || need_apt+=(python3-lz4)
# The matrix's venv for the PyPI clients (compat-tests/matrix/installers.go) is made with venv and ensurepip.
/usr/bin/python3 -c "import ensurepip, venv" >/dev/null 2>&1 || need_apt+=(python3-venv)
# Headless Chromium loads the web console's pages (compat-tests/console_test.go).
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "installing Debian packages: ${need_apt[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

go mod download
scripts/fetch-kafka.sh >/dev/null
KAFKA_VERSION=4.4.0 scripts/fetch-kafka.sh >/dev/null  # Kafka Streams 4.4 (compat-tests/streams_test.go)
# kafkajs for the compatibility matrix (compat-tests/matrix), installed into the cache, never
# into the repository.
if ! [ -f "${SLUICE_CACHE:-$HOME/.cache/sluice}/npm/node_modules/kafkajs/package.json" ]; then
  mkdir -p "${SLUICE_CACHE:-$HOME/.cache/sluice}/npm"
  npm install --no-audit --no-fund --silent --prefix "${SLUICE_CACHE:-$HOME/.cache/sluice}/npm" \
    --cache "${SLUICE_CACHE:-$HOME/.cache/sluice}/npm-cache" kafkajs@2.2.4 >/dev/null
fi
# The compatibility matrix's rows that TestQuickMatrix runs and that come from a registry
# (PyPI: confluent-kafka, kafka-python 2.x, aiokafka in a venv; npm: @platformatic/kafka), each
# installed into the cache by the matrix's own installer (compat-tests/matrix/installers.go).
# The venv's confluent-kafka bundles a librdkafka of 2.5 or later, which pushes client
# telemetry (KIP-714): compat-tests/telemetry_test.go uses it too (Debian's is older).
go run ./compat-tests/matrix -install '^(confluent-pypi|kafka-python-2|aiokafka|platformatic)$'
