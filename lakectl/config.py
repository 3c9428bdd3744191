"""Configuration: warehouse root, default table, Spark and storage settings.

Precedence, highest first: command-line flags, ``LAKECTL_*`` environment variables, the project
``./lakectl.toml``, the user's ``~/.config/lakectl/lakectl.toml``, built-in defaults. The project
file may not set what could run code or send data elsewhere (:mod:`lakectl.project_file`).
"""

from __future__ import annotations

import difflib
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lakectl.errors import UsageError
from lakectl.project_file import filter_project_file

DEFAULT_WAREHOUSE = "./warehouse"
SECRET_HINTS = ("secret", "password", "token", "key", "credential")
MASK = "****"


def is_secret(name: str) -> bool:
    """Whether a setting's name says it holds a secret (key, secret, token, password, ...)."""
    return any(hint in name.lower() for hint in SECRET_HINTS)


def mask_value(name: str, value: Any) -> Any:
    """``value`` fit for display: secrets masked, also inside nested tables and in the
    ``;token=...`` parameter of a Spark Connect URL."""
    if isinstance(value, dict):
        return {k: mask_value(k, v) for k, v in value.items()}
    if is_secret(name):
        return MASK
    if isinstance(value, str) and value.startswith("sc://") and ";" in value:
        base, *params = value.split(";")
        shown = [
            f"{k}={MASK}" if is_secret(k) else f"{k}={v}"
            for k, _, v in (param.partition("=") for param in params)
        ]
        return ";".join([base, *shown])
    return value


@dataclass(frozen=True)
class Config:
    """The effective configuration of one invocation."""

    warehouse: str = DEFAULT_WAREHOUSE
    default_table: str | None = None
    master: str = "local[*]"
    remote: str | None = None
    engine: str = "spark"
    spark_conf: dict[str, str] = field(default_factory=dict)
    storage_options: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    # Problems worth a warning that do not stop a command, e.g. an unknown key in a file.
    warnings: tuple[str, ...] = ()

    def masked(self) -> dict[str, Any]:
        """The configuration for display, with secrets masked."""

        return {
            "warehouse": self.warehouse,
            "default_table": self.default_table,
            "master": self.master,
            "remote": mask_value("remote", self.remote),
            "engine": self.engine,
            "spark_conf": mask_value("spark_conf", self.spark_conf),
            "storage_options": mask_value("storage_options", self.storage_options),
            "sources": self.sources,
        }

    def effective(self) -> list[tuple[str, Any, str]]:
        """Every setting as (name, masked value, where it came from), for ``lakectl config``.

        Spark settings are named ``spark.conf.<key>``, storage options ``storage.<key>``; a value
        nobody set has the source ``default``.
        """
        top = {
            "warehouse": self.warehouse,
            "default_table": self.default_table,
            "master": self.master,
            "remote": self.remote,
            "engine": self.engine,
        }
        entries = [(k, mask_value(k, v), self.sources.get(k, "default")) for k, v in top.items()]
        for prefix, values in (("spark.conf", self.spark_conf), ("storage", self.storage_options)):
            for key, value in sorted(values.items()):
                name = f"{prefix}.{key}"
                entries.append((name, mask_value(key, value), self.sources.get(name, "default")))
        return entries


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: invalid TOML: {exc}") from exc


def user_config_file() -> Path:
    """The user's own ``$XDG_CONFIG_HOME/lakectl/lakectl.toml`` (``~/.config/...``)."""
    home = Path(os.environ.get("XDG_CONFIG_HOME", Path.home() / ".config"))
    return home / "lakectl" / "lakectl.toml"


def project_config_file(cwd: Path | None = None) -> Path:
    """The project file: ``lakectl.toml`` in the current folder."""
    return (cwd or Path.cwd()) / "lakectl.toml"


def config_files(cwd: Path | None = None) -> list[Path]:
    """Config files in increasing precedence: user level, then project level, then
    ``LAKECTL_CONFIG``."""
    explicit = os.environ.get("LAKECTL_CONFIG")
    files = [user_config_file(), project_config_file(cwd)]
    if explicit:
        files.append(Path(explicit))
    return [f for f in files if f.is_file()]


def _is_project_file(path: Path, cwd: Path | None) -> bool:
    """``path`` is the current folder's lakectl.toml, and not also the user's own file or the
    one ``LAKECTL_CONFIG`` names (a folder the user works in may be their config folder)."""
    if path != project_config_file(cwd):
        return False
    trusted = [user_config_file()]
    if os.environ.get("LAKECTL_CONFIG"):
        trusted.append(Path(os.environ["LAKECTL_CONFIG"]))
    resolved = path.resolve()
    return all(resolved != t.resolve() for t in trusted)


# The keys a lakectl.toml may hold: top-level values, and the tables [spark.conf] and [storage].
FILE_KEYS = (
    "warehouse",
    "table",
    "default_table",
    "master",
    "remote",
    "engine",
    "spark",
    "storage",
)
SPARK_TABLE_KEYS = ("conf",)


def unknown_keys(path: Path, data: dict[str, Any]) -> list[str]:
    """A warning per key of a config file that lakectl does not know (a typo is otherwise
    ignored silently), naming the known keys and the closest one."""
    found: list[tuple[str, tuple[str, ...]]] = [(k, FILE_KEYS) for k in data if k not in FILE_KEYS]
    spark = data.get("spark")
    if isinstance(spark, dict):
        spark_known = tuple(f"spark.{n}" for n in SPARK_TABLE_KEYS)
        found += [(f"spark.{k}", spark_known) for k in spark if k not in SPARK_TABLE_KEYS]
    out = []
    for key, known in found:
        close = difflib.get_close_matches(key, known, n=1)
        guess = f" (did you mean {close[0]!r}?)" if close else ""
        out.append(f"{path}: unknown key {key!r} ignored{guess}; known keys: {', '.join(known)}")
    return out


_ONE_OF = {"master": "remote", "remote": "master"}
_ENV_LEVEL, _FLAG_LEVEL = 100, 200  # above any number of config files


def load_config(
    *,
    warehouse: str | None = None,
    master: str | None = None,
    remote: str | None = None,
    conf: tuple[str, ...] = (),
    cwd: Path | None = None,
) -> Config:
    """Merge files, environment and flags into one :class:`Config`."""
    if master and remote:
        raise UsageError("--master and --remote: give one (how to reach Spark)")
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    levels: dict[str, int] = {}
    spark_conf: dict[str, str] = {}
    storage_options: dict[str, Any] = {}
    warnings: list[str] = []

    def put(key: str, value: str, source: str, level: int) -> None:
        values[key] = value
        sources[key] = source
        levels[key] = level
        # master and remote are one choice: a setting from a higher source replaces the other
        # one from a lower source (LAKECTL_REMOTE in the environment, --master on the command
        # line: local Spark).
        other = _ONE_OF.get(key)
        if other in values and levels[other] < level:
            del values[other], sources[other], levels[other]

    for level, path in enumerate(config_files(cwd)):
        data = _read_toml(path)
        warnings.extend(unknown_keys(path, data))
        if _is_project_file(path, cwd):
            data, refused = filter_project_file(path, data)
            warnings.extend(refused)
        for key in ("warehouse", "default_table", "master", "remote", "engine"):
            if key in data:
                put(key, str(data[key]), str(path), level)
        if "table" in data:
            put("default_table", str(data["table"]), str(path), level)
        file_conf = {k: str(v) for k, v in data.get("spark", {}).get("conf", {}).items()}
        spark_conf.update(file_conf)
        storage_options.update(data.get("storage", {}))
        sources.update({f"spark.conf.{k}": str(path) for k in file_conf})
        sources.update({f"storage.{k}": str(path) for k in data.get("storage", {})})
    env_map = {
        "LAKECTL_WAREHOUSE": "warehouse",
        "LAKECTL_TABLE": "default_table",
        "LAKECTL_MASTER": "master",
        "LAKECTL_REMOTE": "remote",
        "LAKECTL_ENGINE": "engine",
    }
    for env, key in env_map.items():
        if os.environ.get(env):
            put(key, os.environ[env], env, _ENV_LEVEL)
    for env, env_value in os.environ.items():
        if env.startswith("LAKECTL_SPARK_CONF_"):
            suffix = env[len("LAKECTL_SPARK_CONF_") :]
            # SPARK__SQL__SHUFFLE__PARTITIONS is lower-cased; a name written in mixed case
            # (spark__sql__autoBroadcastJoinThreshold) keeps it, as Spark's keys need.
            conf_key = (suffix.lower() if suffix.isupper() else suffix).replace("__", ".")
            spark_conf[conf_key] = env_value
            sources[f"spark.conf.{conf_key}"] = env
    flags = {"warehouse": warehouse, "master": master, "remote": remote}
    for key, value in flags.items():
        if value:
            put(key, value, "command line", _FLAG_LEVEL)
    for item in conf:
        key, sep, value = item.partition("=")
        if not sep:
            raise UsageError(f"--conf {item!r}: expected key=value")
        spark_conf[key.strip()] = value
        sources[f"spark.conf.{key.strip()}"] = "command line"
    return Config(
        warehouse=values.get("warehouse", DEFAULT_WAREHOUSE),
        default_table=values.get("default_table"),
        master=values.get("master", "local[*]"),
        remote=values.get("remote"),
        engine=_engine_setting(values.get("engine"), sources.get("engine")),
        spark_conf=spark_conf,
        storage_options=storage_options,
        sources=sources,
        warnings=tuple(warnings),
    )


def _engine_setting(value: str | None, source: str | None) -> str:
    """The configured engine, checked (a typo is an error naming where it was set)."""
    from lakectl.engine import parse_engine

    return "spark" if value is None else parse_engine(value, source=f"engine in {source}").value


def is_url(ref: str) -> bool:
    """A table reference that is a location rather than a name under the warehouse."""
    return "://" in ref or ref.startswith(("/", "./", "../", "~")) or os.sep in ref or "/" in ref


def resolve_table_url(ref: str | None, config: Config) -> tuple[str, str]:
    """(url, display name) for a TABLE argument: a URL/path, or a name under the warehouse."""
    ref = ref or config.default_table
    if not ref:
        raise UsageError(
            "no TABLE given and no default table configured",
            hint='pass TABLE, or set table = "name" in lakectl.toml or LAKECTL_TABLE',
        )
    if is_url(ref):
        check_table_location(ref)
        return ref, ref
    if not _TABLE_NAME.fullmatch(ref) or ".." in ref or ref.endswith("."):
        raise UsageError(
            f"invalid table name {ref!r}: use letters, digits, _, - and ., starting with a "
            "letter, digit or _ (no '..', no '.' at the end)",
            hint="e.g. sales, sales_2024 or db.sales (or give the table's path or URL)",
        )
    warehouse = config.warehouse.rstrip("/")
    return f"{warehouse}/{ref}", ref


_TABLE_NAME = re.compile(r"\w[\w.-]*")
# Schemes whose "tables" live in this process's memory: created, then gone at exit.
_VOLATILE_SCHEMES = ("memory",)
MEMORY_TABLES_ENV = "LAKECTL_TEST_MEMORY_TABLES"


def check_table_location(ref: str) -> None:
    """Refuse a table location that cannot be meant: a last path part of dots only or starting
    with ``-`` (``/wh/...``, ``/wh/-rf``), or a ``memory://`` URL (nothing would persist; tests
    may allow it with ``LAKECTL_TEST_MEMORY_TABLES=1``)."""
    scheme = ref.partition("://")[0].lower() if "://" in ref else ""
    if scheme in _VOLATILE_SCHEMES and os.environ.get(MEMORY_TABLES_ENV) != "1":
        raise UsageError(
            f"invalid table location {ref!r}: a {scheme}:// table lives in this process's "
            "memory and is gone when the command ends",
            hint="give a local path or an s3://, hdfs:// or file:// URL",
        )
    last = ref.rstrip("/").rsplit("/", 1)[-1]
    if (last and set(last) == {"."} and last not in (".", "..")) or last.startswith("-"):
        raise UsageError(
            f"invalid table location {ref!r}: its last part {last!r} "
            + ("starts with '-'" if last.startswith("-") else "is only dots"),
            hint="name the table folder with letters, digits, _, - and .",
        )
