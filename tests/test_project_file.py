"""A lakectl.toml in the current folder (the project file) cannot start code, nor send the
user's data or credentials elsewhere: such settings are ignored with a warning naming the key and
the file, and honoured from the user's own file, the environment and the command line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lakectl.config import load_config
from lakectl.project_file import project_spark_key_allowed
from lakectl.spark.session import SparkSettings, launch_conf

AGENT = "-javaagent:/tmp/planted/agent.jar"


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    """An empty project folder as cwd, an empty user config dir, no LAKECTL_* variables."""
    for name in list(os.environ):
        if name.startswith("LAKECTL_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    folder = tmp_path / "shared_folder"
    folder.mkdir()
    monkeypatch.chdir(folder)
    return folder


def _user_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "xdg" / "lakectl" / "lakectl.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


PLANTED = f"""
[spark.conf]
"spark.driver.extraJavaOptions" = "{AGENT}"
"spark.jars" = "/tmp/planted/evil.jar"
"spark.sql.shuffle.partitions" = 3
"""


def _resolved(config) -> dict[str, str]:
    """The settings lakectl would start its JVM with (no JVM is started)."""
    return launch_conf(SparkSettings(master=config.master, conf=dict(config.spark_conf)))


def test_a_planted_java_agent_is_ignored_with_a_warning(project):
    planted = project / "lakectl.toml"
    planted.write_text(PLANTED)
    config = load_config()
    assert config.spark_conf == {"spark.sql.shuffle.partitions": "3"}  # tuning is kept
    resolved = _resolved(config)
    assert "-javaagent" not in resolved["spark.driver.extraJavaOptions"]
    assert "evil.jar" not in resolved.get("spark.jars", "")
    assert resolved["spark.sql.shuffle.partitions"] == "3"
    for key in ("spark.driver.extraJavaOptions", "spark.jars"):
        (warning,) = [w for w in config.warnings if repr(key) in w]
        assert warning.startswith(f"{planted}: spark.conf key {key!r} ignored")
        assert "~/.config/lakectl/lakectl.toml" in warning


def test_the_same_key_from_the_user_file_is_honoured(project, tmp_path):
    _user_file(tmp_path, PLANTED)
    config = load_config()
    assert config.warnings == ()
    resolved = _resolved(config)
    assert resolved["spark.driver.extraJavaOptions"].endswith(AGENT)  # after lakectl's own
    assert resolved["spark.driver.extraJavaOptions"].startswith("-Dlog4j.configurationFile=")


def test_the_same_key_from_the_command_line_or_environment_is_honoured(project, monkeypatch):
    (project / "lakectl.toml").write_text(PLANTED)
    config = load_config(conf=(f"spark.driver.extraJavaOptions={AGENT}",))
    assert _resolved(config)["spark.driver.extraJavaOptions"].endswith(AGENT)
    monkeypatch.setenv("LAKECTL_SPARK_CONF_spark__executor__extraJavaOptions", AGENT)
    assert _resolved(load_config())["spark.executor.extraJavaOptions"].endswith(AGENT)


def test_an_explicit_config_file_is_the_users_choice(project, tmp_path, monkeypatch):
    explicit = tmp_path / "mine.toml"
    explicit.write_text(PLANTED)
    monkeypatch.setenv("LAKECTL_CONFIG", str(explicit))
    assert load_config().spark_conf["spark.jars"] == "/tmp/planted/evil.jar"


def test_the_user_config_folder_as_current_folder_is_not_a_project(project, tmp_path, monkeypatch):
    user = _user_file(tmp_path, PLANTED)
    monkeypatch.chdir(user.parent)
    config = load_config()
    assert config.spark_conf["spark.jars"] == "/tmp/planted/evil.jar"
    assert config.warnings == ()


CODE_KEYS = [
    "spark.driver.extraJavaOptions",
    "spark.executor.extraJavaOptions",
    "spark.driver.defaultJavaOptions",
    "spark.executor.defaultJavaOptions",
    "spark.driver.extraClassPath",
    "spark.executor.extraClassPath",
    "spark.driver.extraLibraryPath",
    "spark.executor.extraLibraryPath",
    "spark.jars",
    "spark.jars.packages",
    "spark.jars.repositories",
    "spark.jars.ivy",
    "spark.jars.ivySettings",
    "spark.files",
    "spark.archives",
    "spark.submit.pyFiles",
    "spark.plugins",
    "spark.extraListeners",
    "spark.sql.extensions",
    "spark.sql.queryExecutionListeners",
    "spark.sql.catalog.evil",
    "spark.sql.hive.metastore.jars",
    "spark.sql.parquet.output.committer.class",
    "spark.sql.sources.commitProtocolClass",
    "spark.sql.orc.extraClassPath",
    "spark.executorEnv.PYSPARK_PYTHON",
    "spark.executorEnv.LD_PRELOAD",
    "spark.pyspark.python",
    "spark.pyspark.driver.python",
    "spark.python.worker.reuse",
    "spark.python.daemon.module",
    "spark.python.worker.module",
    "spark.yarn.dist.jars",
    "spark.kubernetes.container.image",
    "spark.hadoop.fs.s3a.impl",
    "spark.hadoop.fs.s3a.endpoint",
    "spark.driver.host",
    "spark.master",
    "spark.redaction.regex",
    "spark.memory.offHeap.dir",
]


@pytest.mark.parametrize("key", CODE_KEYS)
def test_keys_that_run_code_or_reach_elsewhere_are_refused(key):
    assert not project_spark_key_allowed(key)


@pytest.mark.parametrize(
    "key",
    [
        "spark.sql.shuffle.partitions",
        "spark.sql.adaptive.enabled",
        "spark.sql.session.timeZone",
        "spark.sql.orc.filterPushdown",
        "spark.executor.memory",
        "spark.driver.memory",
        "spark.memory.fraction",
        "spark.lakectl.compact.bucketMerge",
    ],
)
def test_tuning_keys_are_allowed(key):
    assert project_spark_key_allowed(key)


def test_a_remote_spark_from_the_project_file_is_ignored(project):
    planted = project / "lakectl.toml"
    planted.write_text('remote = "sc://collector.example:15002"\n')
    config = load_config()
    assert config.remote is None and config.master == "local[*]"
    assert any(
        w.startswith(f"{planted}: remote = 'sc://collector.example:15002' ignored")
        for w in config.warnings
    )
    planted.write_text('master = "spark://collector.example:7077"\n')
    assert load_config().master == "local[*]"
    planted.write_text('remote = "sc://127.0.0.1:15002"\n')
    assert load_config().remote == "sc://127.0.0.1:15002"  # this machine: kept


def test_project_storage_may_not_send_the_users_credentials_elsewhere(project, tmp_path):
    planted = project / "lakectl.toml"
    planted.write_text(
        '[storage]\nendpoint_url = "http://collector.example:9000"\nregion = "eu-west-1"\n'
        'client_kwargs = { endpoint_url = "http://collector.example:9000" }\n'
        'extra_conf = { "fs.defaultFS" = "hdfs://collector.example" }\n'
    )
    config = load_config()
    assert config.storage_options == {"region": "eu-west-1"}
    for key in ("endpoint_url", "client_kwargs", "extra_conf"):
        assert any(w.startswith(f"{planted}: storage key {key!r} ignored") for w in config.warnings)
    # With the project's own credentials, the endpoint is the project's store: kept.
    planted.write_text(
        '[storage]\nendpoint_url = "http://127.0.0.1:8333"\n'
        'access_key_id = "project"\nsecret_access_key = "project-secret"\n'
    )
    assert load_config().storage_options["endpoint_url"] == "http://127.0.0.1:8333"
    # From the user's own file, anything goes.
    planted.unlink()
    _user_file(tmp_path, '[storage]\nendpoint_url = "http://minio.internal:9000"\n')
    assert load_config().storage_options == {"endpoint_url": "http://minio.internal:9000"}


def test_the_cli_warns_and_goes_on(project, lakectl_cli):
    planted = project / "lakectl.toml"
    planted.write_text(PLANTED)
    done = lakectl_cli("config", "--format", "json")
    assert done.code == 0, done.err
    assert f"warning: {planted}: spark.conf key 'spark.driver.extraJavaOptions' ignored" in (
        done.err.replace("\n", " ")
    )
    assert "javaagent" not in done.out
    assert "spark.sql.shuffle.partitions" in done.out


def test_a_huge_planted_key_gives_a_bounded_escaped_warning(project, lakectl_cli):
    key = "spark.\x1b]52;c;ZQ==\x07" + "k" * 100_000
    (project / "lakectl.toml").write_text(
        f'[spark.conf]\n"{key}" = "1"\n'.replace("\x1b", "\\u001b").replace("\x07", "\\u0007")
    )
    done = lakectl_cli("config", "--json")
    assert done.code == 0, done.err
    assert len(done.err) < 2_000 and "more characters)" in done.err
    assert "\x1b" not in done.err and "\x07" not in done.err
