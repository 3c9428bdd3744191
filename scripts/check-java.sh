#!/usr/bin/env bash
# Spark needs a Java runtime (17 or 21). Fail early with a clear message instead of a Py4J stack trace.
set -euo pipefail
if ! command -v java >/dev/null 2>&1 && [ -z "${JAVA_HOME:-}" ]; then
  echo "error: Java was not found. lakectl runs Spark, which needs Java 17 or 21." >&2
  echo "       Install it (Debian/Ubuntu: apt-get install openjdk-17-jre-headless) or set JAVA_HOME." >&2
  exit 3
fi
java_bin="${JAVA_HOME:+$JAVA_HOME/bin/}java"
version=$("$java_bin" -version 2>&1 | awk -F'"' '/version/ {print $2; exit}')
major=${version%%.*}
if [ "$major" != "17" ] && [ "$major" != "21" ]; then
  echo "error: Java $version found; Spark 4 needs Java 17 or 21." >&2
  exit 3
fi
