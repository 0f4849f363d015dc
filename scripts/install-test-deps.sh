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
# confluent-kafka from PyPI with a librdkafka of 2.5 or later, which pushes client telemetry
# (KIP-714; compat-tests/telemetry_test.go); Debian's librdkafka is older. In its own venv in
# the cache, never in the repository.
RDKAFKA_VENV="${SLUICE_CACHE:-$HOME/.cache/sluice}/pyvenv-rdkafka"
if ! "$RDKAFKA_VENV/bin/python" -c "import confluent_kafka" >/dev/null 2>&1; then
  /usr/bin/python3 -m venv "$RDKAFKA_VENV"
  "$RDKAFKA_VENV/bin/pip" install -q --disable-pip-version-check confluent-kafka==2.16.1 >/dev/null
fi
