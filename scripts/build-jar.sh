#!/usr/bin/env bash
# Build lakectl's Spark data source (jvm/src) into lakectl/jars/lakectl-spark.jar, against the
# Spark jars of the virtualenv's pyspark. Without a JDK (javac), say so and build nothing:
# lakectl then reads through the live-row kernel in Spark tasks, correct but slower (README, "Reads").
set -euo pipefail
python="$1"
out="lakectl/jars/lakectl-spark.jar"
javac_bin="${JAVA_HOME:+$JAVA_HOME/bin/}javac"
if ! command -v "$javac_bin" >/dev/null 2>&1; then
  echo "warning: no javac (a JDK 17 or 21): lakectl's data source is not built, and reads of" >&2
  echo "         tables with deltas take the slower path. apt-get install openjdk-17-jdk-headless" >&2
  rm -f "$out"
  exit 0
fi
spark_jars=$("$python" -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')
classes=$(mktemp -d)
trap 'rm -rf "$classes"' EXIT
"$javac_bin" -nowarn --release 17 -cp "$spark_jars/*" -d "$classes" jvm/src/io/lakectl/spark/*.java
mkdir -p "$(dirname "$out")"
jar_bin="${JAVA_HOME:+$JAVA_HOME/bin/}jar"
"$jar_bin" cf "$out.tmp" -C "$classes" .
mv "$out.tmp" "$out"
echo "built $out"
