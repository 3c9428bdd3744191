"""hdfs:// URLs and what happens without a Hadoop client. No HDFS (and no libhdfs) can run here:
these tests cover URL handling, warehouse names, the URL Spark is given, and the error a user
without libhdfs / HADOOP_HOME / CLASSPATH / JAVA_HOME meets. The put-if-absent contract runs on
HDFS only with LAKECTL_TEST_HDFS_URL (see conftest.py)."""

from __future__ import annotations

import pickle

import pytest

from lakectl.config import Config, resolve_table_url
from lakectl.errors import StorageError
from lakectl.storage.fs import storage_for
from lakectl.storage.hdfs import HdfsLocation, environment_problems, parse_hdfs_url


@pytest.mark.parametrize(
    ("url", "host", "port", "path"),
    [
        ("hdfs://nn1:8020/wh/sales", "nn1", 8020, "/wh/sales"),
        ("hdfs://nn1:9000/wh/sales/", "nn1", 9000, "/wh/sales"),
        ("hdfs://nn1/wh/sales", "nn1", 8020, "/wh/sales"),  # HDFS's default RPC port
        ("hdfs://nameservice1/wh/sales", "nameservice1", 8020, "/wh/sales"),
        ("hdfs:///wh/sales", "default", 0, "/wh/sales"),  # fs.defaultFS of core-site.xml
        ("hdfs://nn1:8020", "nn1", 8020, "/"),
        ("hdfs://nn1:8020//wh//t", "nn1", 8020, "/wh//t"),
    ],
)
def test_parse_hdfs_url(url, host, port, path):
    assert parse_hdfs_url(url) == HdfsLocation("hdfs", host, port, path)


def test_a_port_that_is_not_a_number_is_refused():
    with pytest.raises(StorageError, match="namenode port is not a number"):
        parse_hdfs_url("hdfs://nn1:web/wh")


@pytest.mark.parametrize(
    ("url", "normalized"),
    [
        ("hdfs://nn1:8020/wh/sales", "hdfs://nn1:8020/wh/sales"),
        ("hdfs://nn1/wh/sales/", "hdfs://nn1:8020/wh/sales"),
        ("hdfs:///wh/sales", "hdfs:///wh/sales"),
    ],
)
def test_storage_paths_are_absolute_and_urls_keep_the_namenode(url, normalized):
    storage, path = storage_for(url, {"user": "etl"})
    assert storage.scheme == "hdfs"
    assert path == "/wh/sales"
    assert storage.url(path) == normalized
    assert storage.url(storage.join(path, "_lakectl", "log")) == normalized + "/_lakectl/log"
    assert storage.options["user"] == "etl"  # [storage] options reach libhdfs
    again = pickle.loads(pickle.dumps(storage))  # as executors get it
    assert (again.url(path), again.options) == (normalized, storage.options)
    assert storage_for(storage.url(path))[1] == path


def test_warehouse_names_on_hdfs():
    config = Config(warehouse="hdfs://nn1:8020/user/hive/warehouse/")
    url, name = resolve_table_url("sales", config)
    assert (url, name) == ("hdfs://nn1:8020/user/hive/warehouse/sales", "sales")
    storage, path = storage_for(url)
    assert (storage.options["host"], storage.options["port"], path) == (
        "nn1", 8020, "/user/hive/warehouse/sales",
    )  # fmt: skip


def test_spark_is_given_the_full_hdfs_url(spark):
    from lakectl.spark.fsspec_orc import IO_CONF, hadoop_url

    storage, path = storage_for("hdfs://127.0.0.1:8020/wh/t")
    spark.conf.set(IO_CONF, "hadoop")  # no probe: nothing listens on that port
    try:
        assert hadoop_url(spark, storage, storage.join(path, "delta_1_1_0000")) == (
            "hdfs://127.0.0.1:8020/wh/t/delta_1_1_0000"
        )
    finally:
        spark.conf.unset(IO_CONF)


def test_environment_problems_name_what_is_missing(tmp_path):
    assert environment_problems({}) == [
        "libhdfs.so not found (HADOOP_HOME and ARROW_LIBHDFS_DIR unset)",
        "JAVA_HOME is not set",
        "CLASSPATH holds no Hadoop jars (set it to the output of `hadoop classpath --glob`)",
    ]
    native = tmp_path / "hadoop" / "lib" / "native"
    native.mkdir(parents=True)
    (native / "libhdfs.so").write_bytes(b"")
    jdk = tmp_path / "jdk" / "lib" / "server"
    jdk.mkdir(parents=True)
    (jdk / "libjvm.so").write_bytes(b"")
    ready = {
        "HADOOP_HOME": str(tmp_path / "hadoop"),
        "JAVA_HOME": str(tmp_path / "jdk"),
        "CLASSPATH": "/opt/hadoop/share/hadoop/common/hadoop-common-3.4.1.jar",
    }
    assert environment_problems(ready) == []
    no_jdk = str(tmp_path / "hadoop")
    assert environment_problems({**ready, "JAVA_HOME": no_jdk}) == [
        f"no libjvm.so under JAVA_HOME={no_jdk}"
    ]


def test_without_libhdfs_commands_fail_with_the_setup_to_do(monkeypatch, tmp_path, lakectl_cli):
    for name in ("HADOOP_HOME", "ARROW_LIBHDFS_DIR", "CLASSPATH", "JAVA_HOME"):
        monkeypatch.delenv(name, raising=False)
    storage, path = storage_for("hdfs://127.0.0.1:8020/wh/t")
    with pytest.raises(StorageError) as failed:
        storage.exists(path)
    message = failed.value.message
    assert message.startswith("cannot reach hdfs://127.0.0.1:8020 through libhdfs (pyarrow): ")
    assert "libhdfs.so not found" in message and "JAVA_HOME is not set" in message
    assert "hadoop classpath --glob" in failed.value.hint
    assert len(message.splitlines()) == 1  # not pyarrow's list of every path it tried

    done = lakectl_cli("create", "hdfs://127.0.0.1:8020/wh/t", "--schema", "id bigint", "--json")
    assert done.code == 74, done.out
    error = done.json["error"]
    assert error["type"] == "storage"
    assert "through libhdfs (pyarrow)" in error["message"]
    assert "CLASSPATH" in error["hint"]
