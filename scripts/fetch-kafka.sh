#!/usr/bin/env bash
# Fetches Apache Kafka's jars (broker, tools, clients, streams) from Maven Central into a cache
# outside the repository and prints the directory that holds them. Idempotent: a second run with
# the jars present does nothing. Used by tests (kafka-dump-log, CLI tools) and by benchmarks.
# KAFKA_JARS=connect fetches Kafka Connect's runtime, its file connectors and MirrorMaker 2's
# connectors (connect-mirror) instead, into a directory of their own (compat-tests/matrix's Kafka
# Connect and MirrorMaker 2 rows). .complete records the artifact list, so adding one refetches.
set -euo pipefail
KAFKA_VERSION="${KAFKA_VERSION:-4.4.0}"
KAFKA_JARS="${KAFKA_JARS:-all}"
CACHE="${SLUICE_CACHE:-$HOME/.cache/sluice}"
case "$KAFKA_JARS" in
  all)
    DIR="$CACHE/kafka-$KAFKA_VERSION"
    ARTIFACTS="kafka_2.13 kafka-tools kafka-clients kafka-streams" ;;
  connect)
    DIR="$CACHE/kafka-connect-$KAFKA_VERSION"
    ARTIFACTS="connect-runtime connect-file connect-json connect-mirror connect-mirror-client" ;;
  *)
    echo "fetch-kafka.sh: KAFKA_JARS=$KAFKA_JARS: want all or connect" >&2
    exit 2 ;;
esac
# (An "all" directory's .complete from before the list was recorded is empty; it stays valid.)
if [ -f "$DIR/.complete" ] && { [ "$KAFKA_JARS" = all ] || [ "$(cat "$DIR/.complete")" = "$ARTIFACTS" ]; }; then
  echo "$DIR/lib"
  exit 0
fi
mkdir -p "$DIR"
cat > "$DIR/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>sluice</groupId>
  <artifactId>kafka-jars</artifactId>
  <version>1</version>
  <dependencies>
$(for a in $ARTIFACTS; do echo "    <dependency><groupId>org.apache.kafka</groupId><artifactId>$a</artifactId><version>$KAFKA_VERSION</version></dependency>"; done)
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-reload4j</artifactId><version>1.7.36</version></dependency>
  </dependencies>
</project>
POM
(cd "$DIR" && mvn -q -B dependency:copy-dependencies -DoutputDirectory=lib -DincludeScope=runtime >&2)
echo "$ARTIFACTS" > "$DIR/.complete"
echo "$DIR/lib"
