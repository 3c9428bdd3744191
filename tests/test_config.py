"""Configuration precedence (flags > LAKECTL_* > ./lakectl.toml > user file) and TABLE resolution."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lakectl.config import (
    DEFAULT_WAREHOUSE,
    Config,
    is_url,
    load_config,
    mask_value,
    resolve_table_url,
)
from lakectl.errors import UsageError


@pytest.fixture
def clean_env(tmp_path, monkeypatch) -> Path:
    """No LAKECTL_* variables, an empty user config dir, and an empty project dir as cwd."""
    for name in list(os.environ):
        if name.startswith("LAKECTL_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    return project


def _user_config(tmp_path: Path, text: str) -> None:
    path = tmp_path / "xdg" / "lakectl" / "lakectl.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_defaults(clean_env):
    config = load_config()
    assert config.warehouse == DEFAULT_WAREHOUSE == "./warehouse"
    assert config.default_table is None
    assert config.master == "local[*]"
    assert config.remote is None
    assert config.spark_conf == {}
    assert config.sources == {}


def test_project_file(clean_env):
    (clean_env / "lakectl.toml").write_text(
        'warehouse = "/data/wh"\ntable = "doctors"\nmaster = "local[2]"\n'
        '[spark.conf]\n"spark.sql.shuffle.partitions" = 4\n'
        "[storage]\nanon = true\n"
    )
    config = load_config()
    assert config.warehouse == "/data/wh"
    assert config.default_table == "doctors"
    assert config.master == "local[2]"
    assert config.spark_conf == {"spark.sql.shuffle.partitions": "4"}
    assert config.storage_options == {"anon": True}
    assert config.sources["warehouse"] == str(clean_env / "lakectl.toml")


def test_default_table_key_spelled_out(clean_env):
    (clean_env / "lakectl.toml").write_text('default_table = "sales"\n')
    assert load_config().default_table == "sales"


def test_env_beats_project_file(clean_env, monkeypatch):
    (clean_env / "lakectl.toml").write_text(
        'warehouse = "/from/file"\ntable = "a"\nmaster = "local[1]"\n'
    )
    monkeypatch.setenv("LAKECTL_WAREHOUSE", "/from/env")
    monkeypatch.setenv("LAKECTL_TABLE", "b")
    config = load_config()
    assert (config.warehouse, config.default_table, config.master) == ("/from/env", "b", "local[1]")
    assert config.sources["warehouse"] == "LAKECTL_WAREHOUSE"
    assert config.sources["master"].endswith("lakectl.toml")


def test_flags_beat_env_and_file(clean_env, monkeypatch):
    (clean_env / "lakectl.toml").write_text(
        'warehouse = "/from/file"\nremote = "sc://127.0.0.1:1"\n'
    )
    monkeypatch.setenv("LAKECTL_WAREHOUSE", "/from/env")
    monkeypatch.setenv("LAKECTL_MASTER", "local[3]")
    config = load_config(warehouse="/from/flag", remote="sc://flag:2")
    assert (config.warehouse, config.remote) == ("/from/flag", "sc://flag:2")
    assert config.sources["warehouse"] == "command line"


def test_master_and_remote_are_one_choice_taken_from_the_highest_source(clean_env, monkeypatch):
    (clean_env / "lakectl.toml").write_text('remote = "sc://127.0.0.1:1"\n')
    # The file's remote would otherwise win over every --master: Spark Connect, silently.
    config = load_config(master="local[2]")
    assert (config.master, config.remote) == ("local[2]", None)
    assert "remote" not in config.sources
    monkeypatch.setenv("LAKECTL_REMOTE", "sc://env:2")
    assert load_config().remote == "sc://env:2"
    config = load_config(master="local[3]")
    assert (config.master, config.remote) == ("local[3]", None)
    monkeypatch.delenv("LAKECTL_REMOTE")
    monkeypatch.setenv("LAKECTL_MASTER", "local[4]")  # over the file's remote
    config = load_config()
    assert (config.master, config.remote) == ("local[4]", None)
    assert load_config(remote="sc://flag:3").remote == "sc://flag:3"
    with pytest.raises(UsageError, match="--master and --remote: give one"):
        load_config(master="local[2]", remote="sc://flag:3")


def test_empty_env_or_flag_does_not_override(clean_env, monkeypatch):
    (clean_env / "lakectl.toml").write_text('warehouse = "/from/file"\n')
    monkeypatch.setenv("LAKECTL_WAREHOUSE", "")
    assert load_config(warehouse=None).warehouse == "/from/file"


def test_project_file_beats_user_file(clean_env, tmp_path):
    _user_config(tmp_path, 'warehouse = "/user/wh"\ntable = "user_table"\n')
    assert load_config().warehouse == "/user/wh"
    (clean_env / "lakectl.toml").write_text('warehouse = "/project/wh"\n')
    config = load_config()
    assert config.warehouse == "/project/wh"
    assert config.default_table == "user_table"


def test_explicit_config_file_beats_project_file(clean_env, tmp_path, monkeypatch):
    (clean_env / "lakectl.toml").write_text('warehouse = "/project/wh"\n')
    explicit = tmp_path / "other.toml"
    explicit.write_text('warehouse = "/explicit/wh"\n')
    monkeypatch.setenv("LAKECTL_CONFIG", str(explicit))
    assert load_config().warehouse == "/explicit/wh"


def test_spark_conf_from_env_and_flags(clean_env, monkeypatch):
    (clean_env / "lakectl.toml").write_text('[spark.conf]\n"spark.executor.memory" = "1g"\n')
    monkeypatch.setenv("LAKECTL_SPARK_CONF_SPARK__SQL__SHUFFLE__PARTITIONS", "16")
    config = load_config(conf=("spark.sql.shuffle.partitions=2", "spark.x=a=b"))
    assert config.spark_conf == {
        "spark.executor.memory": "1g",
        "spark.sql.shuffle.partitions": "2",  # the flag wins over the environment
        "spark.x": "a=b",
    }
    with pytest.raises(UsageError, match="expected key=value"):
        load_config(conf=("novalue",))


def test_spark_conf_env_names_in_mixed_case_keep_their_case(clean_env, monkeypatch):
    monkeypatch.setenv("LAKECTL_SPARK_CONF_spark__lakectl__compact__bucketMerge", "false")
    monkeypatch.setenv("LAKECTL_SPARK_CONF_SPARK__EXECUTOR__MEMORY", "2g")
    assert load_config().spark_conf == {
        "spark.lakectl.compact.bucketMerge": "false",
        "spark.executor.memory": "2g",
    }


def test_invalid_toml_names_the_file(clean_env):
    (clean_env / "lakectl.toml").write_text("warehouse = \n")
    with pytest.raises(UsageError) as info:
        load_config()
    assert str(clean_env / "lakectl.toml") in info.value.message
    assert "invalid TOML" in info.value.message


def test_masked_hides_secrets():
    config = Config(
        storage_options={"key": "AKIA", "secret": "s3cr3t", "endpoint_url": "http://x"},
        spark_conf={"spark.hadoop.fs.s3a.secret.key": "s", "spark.sql.shuffle.partitions": "4"},
    )
    masked = config.masked()
    assert masked["storage_options"] == {
        "key": "****",
        "secret": "****",
        "endpoint_url": "http://x",
    }
    assert masked["spark_conf"] == {
        "spark.hadoop.fs.s3a.secret.key": "****",
        "spark.sql.shuffle.partitions": "4",
    }


# --- TABLE resolution -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "ref",
    [
        "/data/sales",
        "./sales",
        "../sales",
        "~/sales",
        "file:///data/sales",
        "s3://bucket/sales",
        "hdfs://nn:8020/wh/sales",
        "wh/sales",
    ],
)
def test_locations_are_used_as_they_are(ref):
    assert is_url(ref)
    assert resolve_table_url(ref, Config(warehouse="/wh")) == (ref, ref)


@pytest.mark.parametrize("warehouse", ["/wh", "/wh/", "s3://bucket/wh", "s3://bucket/wh/"])
def test_names_resolve_under_the_warehouse(warehouse):
    url, name = resolve_table_url("sales", Config(warehouse=warehouse))
    assert url == warehouse.rstrip("/") + "/sales"
    assert name == "sales"


def test_default_table_from_config():
    config = Config(warehouse="/wh", default_table="doctors")
    assert resolve_table_url(None, config) == ("/wh/doctors", "doctors")
    assert resolve_table_url("sales", config) == ("/wh/sales", "sales")


def test_no_table_at_all():
    with pytest.raises(UsageError, match="no TABLE given") as info:
        resolve_table_url(None, Config())
    assert info.value.hint and "lakectl.toml" in info.value.hint


@pytest.mark.parametrize(
    "ref", ["a b", "..", ".", "...", "a;b", "sales$", "t*", "-rf", "--help", "-", "a..b", "sales."]
)
def test_invalid_table_names(ref):
    with pytest.raises(UsageError, match="invalid table name") as info:
        resolve_table_url(ref, Config())
    assert info.value.hint and "db.sales" in info.value.hint


@pytest.mark.parametrize(
    ("ref", "says"),
    [
        ("memory://x", "memory:// table lives in this process's memory"),
        ("MEMORY://x/y", "memory:// table"),
        ("/wh/...", "its last part '...' is only dots"),
        ("/wh/..../", "is only dots"),
        ("/wh/-rf", "its last part '-rf' starts with '-'"),
        ("s3://bucket/-x", "starts with '-'"),
    ],
)
def test_invalid_table_locations(ref, says, monkeypatch):
    monkeypatch.delenv("LAKECTL_TEST_MEMORY_TABLES", raising=False)
    with pytest.raises(UsageError, match="invalid table location") as info:
        resolve_table_url(ref, Config())
    assert says in info.value.message and info.value.hint


def test_memory_tables_only_when_a_test_asks(monkeypatch):
    monkeypatch.setenv("LAKECTL_TEST_MEMORY_TABLES", "1")
    assert resolve_table_url("memory://x", Config()) == ("memory://x", "memory://x")


@pytest.mark.parametrize("ref", ["./", "../t", "./t", "/wh/t.v2", "/wh/a-b/", "s3://b/t"])
def test_usual_locations_are_accepted(ref):
    assert resolve_table_url(ref, Config()) == (ref, ref)


@pytest.mark.parametrize("ref", ["sales", "sales_2024", "db.sales", "my-table", "_t", "9a", "été"])
def test_valid_table_names(ref):
    assert not is_url(ref)
    assert resolve_table_url(ref, Config(warehouse="/wh")) == (f"/wh/{ref}", ref)


def test_cli_uses_the_default_table_and_warehouse_from_lakectl_toml(
    clean_env, monkeypatch, lakectl_cli
):
    """`lakectl history` with no TABLE, as a user in a project directory would type it."""
    warehouse = clean_env / "wh"
    (clean_env / "lakectl.toml").write_text(f'warehouse = "{warehouse}"\ntable = "sales"\n')
    created = lakectl_cli(
        "create", "sales", "--schema", "id bigint, amt double", "--primary-key", "id", "--json"
    )
    assert created.code == 0, created.err
    assert created.json["url"] == f"file://{warehouse}/sales"
    assert (warehouse / "sales" / "_lakectl" / "log").is_dir()
    history = lakectl_cli("history", "--json")
    assert history.code == 0, history.err
    assert [e["operation"] for e in history.json["commits"]] == ["create"]
    # The environment beats the file: this warehouse has no such table.
    monkeypatch.setenv("LAKECTL_WAREHOUSE", str(clean_env / "elsewhere"))
    missing = lakectl_cli("history", "--json")
    assert missing.code == 66
    assert "elsewhere" in missing.json["error"]["message"]
    # And a flag beats both.
    flagged = lakectl_cli("history", "--warehouse", str(warehouse), "--json")
    assert flagged.code == 0


# --- lakectl config ---------------------------------------------------------------------------


def _by_name(body: dict) -> dict[str, tuple]:
    return {entry["name"]: (entry["value"], entry["source"]) for entry in body["settings"]}


def test_config_command_shows_values_sources_and_masks_secrets(
    clean_env, tmp_path, monkeypatch, lakectl_cli
):
    _user_config(
        tmp_path,
        'warehouse = "/user/wh"\ntable = "user_table"\n'
        '[spark.conf]\n"spark.hadoop.fs.s3a.secret.key" = "x"\n'
        '[storage]\nkey = "AKIAUSER"\nsecret = "user-secret"\nendpoint_url = "http://s3:9000"\n'
        '[storage.client_kwargs]\nregion_name = "eu-west-1"\naws_session_token = "tok"\n',
    )
    (clean_env / "lakectl.toml").write_text(
        'warehouse = "/project/wh"\nmaster = "local[2]"\n'
        '[spark.conf]\n"spark.sql.shuffle.partitions" = 4\n'
    )
    monkeypatch.setenv("LAKECTL_MASTER", "local[3]")
    monkeypatch.setenv("LAKECTL_SPARK_CONF_SPARK__EXECUTOR__MEMORY", "2g")
    result = lakectl_cli(
        "--remote", "sc://10.0.0.5:15002/;token=abc123;user_id=ann",
        "config", "--conf", "spark.sql.shuffle.partitions=2", "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    assert "abc123" not in result.out and "AKIAUSER" not in result.out
    assert "user-secret" not in result.out and '"tok"' not in result.out
    project, user = str(clean_env / "lakectl.toml"), str(tmp_path / "xdg/lakectl/lakectl.toml")
    assert result.json["files"] == [user, project]
    assert _by_name(result.json) == {
        "warehouse": ("/project/wh", project),
        "default_table": ("user_table", user),
        "master": ("local[*]", "default"),  # --remote replaced LAKECTL_MASTER: one choice
        "remote": ("sc://10.0.0.5:15002/;token=****;user_id=ann", "command line"),
        "engine": ("spark", "default"),
        "spark.conf.spark.executor.memory": ("2g", "LAKECTL_SPARK_CONF_SPARK__EXECUTOR__MEMORY"),
        "spark.conf.spark.hadoop.fs.s3a.secret.key": ("****", user),
        "spark.conf.spark.sql.shuffle.partitions": ("2", "command line"),
        "storage.client_kwargs": (
            {"region_name": "eu-west-1", "aws_session_token": "****"},
            user,
        ),
        "storage.endpoint_url": ("http://s3:9000", user),
        "storage.key": ("****", user),
        "storage.secret": ("****", user),
    }


def test_config_command_text_with_defaults(clean_env, lakectl_cli):
    result = lakectl_cli("config")
    assert result.code == 0, result.err
    header, *lines = [line.split() for line in result.out.splitlines()]  # plain rows: a pipe
    assert header == ["setting", "value", "source"]
    assert lines == [
        ["warehouse", "./warehouse", "default"],
        ["default_table", "NULL", "default"],
        ["master", "local[*]", "default"],
        ["remote", "NULL", "default"],
        ["engine", "spark", "default"],
    ]
    assert "config files read: none" in result.err


def test_mask_value_for_connect_urls_and_nested_tables():
    assert (
        mask_value("remote", "sc://h:1/;use_ssl=true;token=t")
        == "sc://h:1/;use_ssl=true;token=****"
    )
    assert mask_value("remote", "sc://h:1") == "sc://h:1"
    assert mask_value("opts", {"a": {"password": "p", "port": 1}}) == {
        "a": {"password": "****", "port": 1}
    }
    assert mask_value("aws_credentials_file", "/x") == "****"


def test_unknown_key_in_a_file_is_named_with_the_known_keys(clean_env):
    (clean_env / "lakectl.toml").write_text(
        'warehous = "/data/wh"\nmaster = "local[2]"\n[spark]\nconfs = 1\n[spark.conf]\n"spark.cores.max" = 1\n'
    )
    config = load_config()
    assert config.warehouse == DEFAULT_WAREHOUSE  # the typo is not taken for warehouse
    assert config.master == "local[2]" and config.spark_conf == {"spark.cores.max": "1"}
    first, second = config.warnings
    assert "'warehous'" in first and "did you mean 'warehouse'" in first
    assert "known keys: warehouse, table" in first
    assert "'spark.confs'" in second and "spark.conf" in second


def test_known_keys_give_no_warning(clean_env):
    (clean_env / "lakectl.toml").write_text(
        'warehouse = "/w"\ntable = "t"\nremote = "sc://127.0.0.1:1"\n'
        '[spark.conf]\n"spark.cores.max" = 1\n[storage]\nanon = true\n'
    )
    assert load_config().warnings == ()


@pytest.mark.parametrize("position", ["before", "after"])
def test_unknown_key_warns_on_stderr_and_json_stays_one_object(clean_env, position):
    from tests.support.cli import run_lakectl

    (clean_env / "lakectl.toml").write_text('warehous = "/data/wh"\n')
    args = ["--json", "config"] if position == "before" else ["config", "--json"]
    run = run_lakectl(*args)
    assert run.code == 0
    assert isinstance(run.json, dict) and "settings" in run.json
    assert "unknown key 'warehous'" in run.err and "warehouse" in run.err
    assert "warehous" not in run.out.replace("warehouse", "")
