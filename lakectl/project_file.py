"""What a ``lakectl.toml`` in the current folder (the project file) may set.

Anyone who can write to a shared folder can leave a ``lakectl.toml`` there, and the next user who
runs lakectl in that folder reads it. So the project file is trusted with where the tables are
(``warehouse``, ``table``) and with how Spark is tuned, but not with anything that could run code
in the user's JVM or Python workers, or send the user's data and credentials to another host:

- ``[spark.conf]``: an allow-list of tuning settings (:data:`PROJECT_SPARK_KEYS`); inside an
  allowed prefix, a name that speaks of classes, plugins, jars, paths, commands or interpreters
  is still refused. JVM options, class paths, jars, extensions, listeners, plugins, executor
  environment, Python workers, ``spark.hadoop.*``, ``spark.yarn.*``, ``spark.kubernetes.*`` and
  every setting not on the list are ignored.
- ``master`` and ``remote``: only a local master or a server on this machine's loopback.
- ``[storage]``: region, timeouts and anonymous access; an endpoint only together with the
  project's own credentials in the same file (never the user's own keys sent to a planted
  endpoint); nothing else (``client_kwargs``, ``config_kwargs``, ``extra_conf``, ``user``,
  ``kerb_ticket``, ... are ignored).

An ignored setting is a warning naming the key and the file; the command goes on. The user's own
``~/.config/lakectl/lakectl.toml``, ``LAKECTL_CONFIG``, the environment and the command line may
set everything.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

# Exact keys, or prefixes ending in "." that cover the keys under them.
PROJECT_SPARK_KEYS = (
    "spark.sql.shuffle.partitions",
    "spark.sql.adaptive.",
    "spark.sql.files.maxPartitionBytes",
    "spark.sql.files.openCostInBytes",
    "spark.sql.files.maxRecordsPerFile",
    "spark.sql.autoBroadcastJoinThreshold",
    "spark.sql.broadcastTimeout",
    "spark.sql.session.timeZone",
    "spark.sql.ansi.enabled",
    "spark.sql.caseSensitive",
    "spark.sql.orc.",
    "spark.sql.parquet.",
    "spark.sql.execution.arrow.",
    "spark.sql.codegen.",
    "spark.driver.memory",
    "spark.driver.memoryOverhead",
    "spark.driver.cores",
    "spark.driver.maxResultSize",
    "spark.executor.memory",
    "spark.executor.memoryOverhead",
    "spark.executor.cores",
    "spark.executor.instances",
    "spark.cores.max",
    "spark.default.parallelism",
    "spark.task.cpus",
    "spark.memory.",
    "spark.network.timeout",
    "spark.dynamicAllocation.",
    "spark.locality.wait",
    "spark.lakectl.",
)
# Words that, in the part of a key under an allowed prefix, name something that loads code or
# points at files (spark.sql.parquet.output.committer.class, ...).
_CODE_WORDS = (
    "class",
    "extension",
    "listener",
    "plugin",
    "jar",
    "committer",
    "serializer",
    "provider",
    "factory",
    "path",
    "dir",
    "file",
    "python",
    "option",
    "env",
    "command",
    "exec",
)

PROJECT_STORAGE_KEYS = ("region", "anon", "connect_timeout", "read_timeout", "max_attempts")
_ENDPOINT_KEYS = ("endpoint_url",)
_CREDENTIAL_PAIRS = (("access_key_id", "secret_access_key"), ("key", "secret"))
_CREDENTIAL_KEYS = ("access_key_id", "secret_access_key", "session_token", "key", "secret", "token")

_ELSEWHERE = (
    "put it in your own ~/.config/lakectl/lakectl.toml, the environment or the command line"
)


def project_spark_key_allowed(key: str) -> bool:
    """Whether a project file may set the Spark setting ``key`` (see the module text)."""
    for allowed in PROJECT_SPARK_KEYS:
        if allowed.endswith("."):
            if key.startswith(allowed):
                rest = key[len(allowed) :].lower()
                return not any(word in rest for word in _CODE_WORDS)
        elif key == allowed:
            return True
    return False


def is_local_spark(url: str) -> bool:
    """A local master (``local``, ``local[N]``, ...) or a URL whose host is this machine's
    loopback."""
    if url.startswith("local"):
        return True
    return (urlparse(url).hostname or "") in ("127.0.0.1", "localhost", "::1")


def filter_project_file(path: Path, data: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``data`` of the project file ``path`` without what a project file may not set, and a
    warning for each setting left out."""
    kept = dict(data)
    warnings: list[str] = []

    def ignored(what: str, why: str) -> None:
        warnings.append(f"{path}: {what} ignored: {why}; {_ELSEWHERE}")

    for key in ("master", "remote"):
        if key in kept and not is_local_spark(str(kept[key])):
            ignored(
                f"{key} = {str(kept[key])!r}",
                "a lakectl.toml in the current folder may only name a Spark on this machine",
            )
            del kept[key]
    spark = kept.get("spark")
    if isinstance(spark, dict) and isinstance(spark.get("conf"), dict):
        conf = {}
        for key, value in spark["conf"].items():
            if project_spark_key_allowed(str(key)):
                conf[key] = value
            else:
                ignored(
                    f"spark.conf key {key!r}",
                    "a lakectl.toml in the current folder may set Spark tuning settings only, "
                    "not JVM options, class paths, jars, plugins or anything that runs code",
                )
        kept["spark"] = {**spark, "conf": conf}
    storage = kept.get("storage")
    if isinstance(storage, dict):
        kept["storage"] = _project_storage(storage, ignored)
    return kept, warnings


def _project_storage(
    storage: dict[str, Any], ignored: Callable[[str, str], None]
) -> dict[str, Any]:
    own_credentials = any(a in storage and b in storage for a, b in _CREDENTIAL_PAIRS)
    out = {}
    for key, value in storage.items():
        kept = key in PROJECT_STORAGE_KEYS or key in _CREDENTIAL_KEYS
        if kept or (key in _ENDPOINT_KEYS and own_credentials):
            out[key] = value
        elif key in _ENDPOINT_KEYS:
            ignored(
                f"storage key {key!r}",
                "a lakectl.toml in the current folder may name an endpoint only together with "
                "its own access_key_id and secret_access_key (your own credentials are never "
                "sent to an endpoint it names)",
            )
        else:
            ignored(
                f"storage key {key!r}",
                "a lakectl.toml in the current folder may set "
                f"{', '.join(PROJECT_STORAGE_KEYS)}, and an endpoint with its own credentials",
            )
    return out
