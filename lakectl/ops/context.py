"""What every operation needs: the configuration, table resolution and a lazy Spark session."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lakectl.config import Config, resolve_table_url
from lakectl.storage.fs import storage_for
from lakectl.table.store import TableStore

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

Progress = Callable[[str], None]


def no_progress(_: str) -> None:
    """A progress callback that shows nothing."""


@dataclass
class Context:
    """Configuration plus the Spark session, started only by operations that need one."""

    config: Config = field(default_factory=Config)
    progress: Progress = no_progress
    _spark: Any = None

    def table(self, ref: str | None) -> TableStore:
        url, name = resolve_table_url(ref, self.config)
        storage, path = storage_for(url, self.config.storage_options)
        return TableStore(storage, path, name)

    def use_spark(self, session: SparkSession) -> None:
        """Run this context's jobs in ``session`` (the caller's) instead of starting one."""
        self._spark = session

    def spark(self) -> SparkSession:
        if self._spark is None:
            from lakectl.spark.session import SparkSettings, get_session

            self.progress("starting Spark")
            self._spark = get_session(
                SparkSettings(
                    master=self.config.master,
                    remote=self.config.remote,
                    conf=dict(self.config.spark_conf),
                )
            )
        return self._spark
