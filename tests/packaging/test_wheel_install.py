"""The package as a user installs it: build the sdist and wheel, install the wheel into a new
virtualenv outside the checkout, and run lakectl from there on the sample data.

Cheap on purpose: the wheel goes in with ``--no-deps`` and the new environment sees the test
environment's dependencies through a ``.pth`` line (that adds their directory, not the test
environment's own ``.pth`` files, so the checkout's editable lakectl does not shadow the wheel).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

from lakectl.data_source_jar import jar_path
from lakectl.spark.native_read import ENABLED_CONF

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
SALES = REPO / "sample_data" / "sales"
SCHEMA = (
    "sell_id bigint, acct_id bigint, change_ts string, create_ts string, payment_type_id string, "
    "status_id string, total_amt double, batch int, op_code string, store_id string, "
    "create_date string"
)
CDC = ("--mode", "cdc", "--op-column", "op_code", "--order-by", "change_ts")
JAR_IN_PACKAGE = "lakectl/jars/lakectl-spark.jar"
# The sample base's rows (tests/ops/test_sample_demo.py checks the batches against an oracle).
BASE_INSERTED = 200


def _outside_env(bin_dir: Path) -> dict[str, str]:
    """This process's environment without what points into the checkout or the test
    environment's Python, with ``bin_dir`` first on PATH."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")
        and not k.startswith(("LAKECTL_", "_LAKECTL"))
    }
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    return env


class Installed:
    """A virtualenv with only the wheel installed into it, run outside the checkout."""

    def __init__(self, root: Path, work: Path) -> None:
        self.root, self.work = root, work
        self.bin = root / "bin"
        self.env = _outside_env(self.bin)

    def run(self, *args: object) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [str(a) for a in args],
            cwd=self.work,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, f"{args}: {done.stderr[-2000:]}"
        return done

    def lakectl_json(self, *args: object) -> dict:
        return json.loads(self.run(self.bin / "lakectl", *args, "--json").stdout)


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    """sdist and wheel as ``python -m build`` makes them (the wheel from the sdist)."""
    if jar_path() is None and shutil.which("javac") is None:
        pytest.skip("no JDK: the wheel would carry no data source (the build warns)")
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(REPO)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return out


@pytest.fixture(scope="module")
def installed(dist, tmp_path_factory) -> Installed:
    root = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    site = subprocess.run(
        [
            root / "bin" / "python",
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['purelib'])",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    (wheel,) = dist.glob("lakectl-*.whl")
    pip = [sys.executable, "-m", "pip", "--python", str(root / "bin" / "python")]
    subprocess.run(
        [*pip, "install", "--quiet", "--no-deps", "--no-index", str(wheel)],
        check=True,
        cwd=root,
        env=_outside_env(root / "bin"),
    )
    # Only now: pip would take the test environment's lakectl for this one and install nothing.
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (Path(site) / "lakectl_test_dependencies.pth").write_text("\n".join(sorted(ours)) + "\n")
    work = tmp_path_factory.mktemp("work")
    return Installed(root, work)


def test_the_sdist_carries_what_a_wheel_build_needs(dist):
    (sdist,) = dist.glob("lakectl-*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    sources = {p.relative_to(REPO).as_posix() for p in (REPO / "jvm").rglob("*.java")}
    assert sources and sources <= names
    assert {"scripts/build-jar.sh", "build_support/lakectl_build.py", JAR_IN_PACKAGE} <= names


def test_the_wheel_carries_the_data_source(dist):
    (wheel,) = dist.glob("lakectl-*.whl")
    with zipfile.ZipFile(wheel) as whl:
        jar = whl.read(JAR_IN_PACKAGE)
    assert jar[:2] == b"PK"  # a jar is a zip archive
    assert b"io/lakectl/spark/AcidSource.class" in jar


def test_the_installed_lakectl_is_the_wheels_and_finds_its_jar(installed):
    where = installed.run(installed.bin / "python", "-c", "import lakectl; print(lakectl.__file__)")
    package = Path(where.stdout.strip()).parent
    assert package.is_relative_to(installed.root), package
    version = installed.run(installed.bin / "lakectl", "--version").stdout.splitlines()
    assert version[1] == f"Spark data source: found, {package / 'jars' / 'lakectl-spark.jar'}"


def test_bash_completion_of_the_installed_command(installed):
    script = (
        'eval "$(lakectl completion bash)"; COMP_WORDS=(lakectl snap); COMP_CWORD=1; '
        '_lakectl_completion lakectl; printf "%s\\n" "${COMPREPLY[@]}"'
    )
    assert installed.run("bash", "-c", script).stdout.split() == ["snapshot"]


def test_load_and_snapshot_read_through_the_data_source(
    installed, spark, lakectl_cli, jvm_processes
):
    # One load and one snapshot: each command starts a JVM (the read paths' agreement on
    # deltas and deletes is tests/spark/test_native_read.py's).
    wh = installed.work / "warehouse"
    table = ("sales", "--warehouse", wh)
    created = installed.lakectl_json(
        "create", *table, "--schema", SCHEMA, "--primary-key", "sell_id",
        "--partition-by", "create_date",
    )  # fmt: skip
    assert created["table"] == "sales"
    base = installed.lakectl_json("load", *table, SALES / "base.csv", *CDC, *jvm_processes)
    assert base["counts"]["inserted"] == BASE_INSERTED
    snapshot = installed.lakectl_json("snapshot", *table, *jvm_processes)
    assert snapshot["read_path"] == "data_source"
    assert len(snapshot["rows"]) == BASE_INSERTED

    # The same table read by this checkout's lakectl without the data source: the same rows.
    spark.conf.set(ENABLED_CONF, "false")
    try:
        joined = lakectl_cli("snapshot", *table, "--json")
    finally:
        spark.conf.unset(ENABLED_CONF)
    assert joined.code == 0, joined.err
    assert joined.json["read_path"] == "kernel"
    key = "sell_id"
    assert sorted(snapshot["rows"], key=lambda r: r[key]) == sorted(
        joined.json["rows"], key=lambda r: r[key]
    )
