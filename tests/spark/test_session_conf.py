"""Driver settings: loopback only for local and loopback masters; nothing starts a JVM here."""

from __future__ import annotations

import os
import sys

import pytest

from lakectl.spark.daemons import connect_server_argv
from lakectl.spark.session import driver_conf


@pytest.mark.parametrize("master", ["local[2]", "spark://127.0.0.1:7077", "spark://localhost:1"])
def test_local_and_loopback_drivers_bind_to_loopback(master):
    conf = driver_conf(master)
    assert conf["spark.driver.host"] == conf["spark.driver.bindAddress"] == "127.0.0.1"
    assert conf["spark.executorEnv.PYSPARK_PYTHON"] == sys.executable


@pytest.mark.parametrize("master", ["yarn", "spark://spark-master:7077", "k8s://https://k:443"])
def test_cluster_drivers_announce_a_reachable_address(master):
    conf = driver_conf(master)
    assert "spark.driver.host" not in conf and "spark.driver.bindAddress" not in conf
    # The cluster's Python is not this machine's virtualenv.
    assert "spark.executorEnv.PYSPARK_PYTHON" not in conf
    assert "-XX:-DontCompileHugeMethods" in conf["spark.driver.extraJavaOptions"]


def test_only_local_mode_skips_hadoop_checksum_files():
    assert driver_conf("local[2]")["spark.hadoop.fs.file.impl"].endswith("RawLocalFileSystem")
    # YARN's client casts FileSystem.getLocal to LocalFileSystem: cluster masters keep Hadoop's.
    for master in ("yarn", "spark://127.0.0.1:7077", "k8s://https://k:443"):
        assert "spark.hadoop.fs.file.impl" not in driver_conf(master)


def test_connect_server_listens_on_loopback_with_lakectl_driver_settings():
    argv = connect_server_argv(15999, master="local[1]", conf={"spark.sql.shuffle.partitions": "3"})
    pairs = dict(a.split("=", 1) for a in argv[argv.index("--master") + 2 :] if a != "--conf")
    assert argv[1:3] == ["--class", "org.apache.spark.sql.connect.service.SparkConnectServer"]
    assert argv[argv.index("--master") + 1] == "local[1]"
    assert pairs["spark.connect.grpc.binding.address"] == "127.0.0.1"
    assert pairs["spark.connect.grpc.binding.port"] == "15999"
    assert pairs["spark.driver.bindAddress"] == "127.0.0.1"
    assert pairs["spark.sql.shuffle.partitions"] == "3"
    assert "log4j2.properties" in pairs["spark.driver.extraJavaOptions"]


def test_local_drivers_use_the_throughput_collector_unless_the_user_picks_one():
    from lakectl.spark.session import merge_java_options

    local = driver_conf("local[2]")["spark.driver.extraJavaOptions"]
    assert "-XX:+UseParallelGC" in local.split()
    # A cluster's driver does not run the tasks: the JVM's default collector stays.
    assert "-XX:+UseParallelGC" not in driver_conf("yarn")["spark.driver.extraJavaOptions"]
    # The JVM refuses two collectors: the user's choice replaces ours, other options stay.
    merged = merge_java_options(local, "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC").split()
    assert "-XX:+UseSerialGC" in merged and "-XX:+UseParallelGC" not in merged
    assert "-XX:-DontCompileHugeMethods" in merged and "-XX:TieredStopAtLevel=1" in merged
    assert merge_java_options(local, "-Xss4m").split() == [*local.split(), "-Xss4m"]


def test_the_data_source_jar_is_on_the_drivers_class_path_and_shipped_to_clusters():
    from lakectl.spark.native_read import jar_path
    from lakectl.spark.session import SparkSettings, launch_conf

    jar = jar_path()
    assert jar is not None  # make builds it (scripts/build-jar.sh)
    local = driver_conf("local[2]")
    assert local["spark.driver.extraClassPath"] == jar
    assert "spark.jars" not in local  # local mode runs the tasks in the driver
    cluster = driver_conf("spark://127.0.0.1:7077")
    assert cluster["spark.jars"] == jar
    # The user's class path and jars are added to lakectl's, not put in their place.
    mine = {"spark.driver.extraClassPath": "/opt/x.jar", "spark.jars": "/opt/y.jar"}
    conf = launch_conf(SparkSettings(master="spark://127.0.0.1:7077", conf=mine))
    assert conf["spark.driver.extraClassPath"].split(os.pathsep) == [jar, "/opt/x.jar"]
    assert conf["spark.jars"].split(",") == [jar, "/opt/y.jar"]


def test_local_cluster_executors_are_processes_and_get_the_jar():
    assert "spark.jars" in driver_conf("local-cluster[2,1,1024]")
    assert "spark.jars" not in driver_conf("local")
