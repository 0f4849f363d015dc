#!/usr/bin/env bash
# Fetches Apache Kafka's jars (broker, tools, clients, streams) from Maven Central into a cache
# outside the repository and prints the directory that holds them. Idempotent: a second run with
# the jars present does nothing. Used by tests (kafka-dump-log, CLI tools) and by benchmarks.
set -euo pipefail
KAFKA_VERSION="${KAFKA_VERSION:-4.4.0}"
CACHE="${SLUICE_CACHE:-$HOME/.cache/sluice}"
DIR="$CACHE/kafka-$KAFKA_VERSION"
if [ -f "$DIR/.complete" ]; then
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
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>$KAFKA_VERSION</version></dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-tools</artifactId><version>$KAFKA_VERSION</version></dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-clients</artifactId><version>$KAFKA_VERSION</version></dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-streams</artifactId><version>$KAFKA_VERSION</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-reload4j</artifactId><version>1.7.36</version></dependency>
  </dependencies>
</project>
POM
(cd "$DIR" && mvn -q -B dependency:copy-dependencies -DoutputDirectory=lib -DincludeScope=runtime >&2)
touch "$DIR/.complete"
echo "$DIR/lib"
