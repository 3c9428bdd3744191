"""lakectl: maintenance for Hive-ACID-layout data lakes, as a library and a command line.

```python
import lakectl

t = lakectl.open_table("sales", warehouse="./warehouse")
t.load("batch.csv", mode="cdc", op_column="op_code", order_by="change_ts")
t.scan(as_of="2024-06-01", where="store_id = 'S01'").to_pandas()
t.changes(from_version=2).to_arrow()
```

See :class:`lakectl.Table` (:mod:`lakectl.api`); every error is a :class:`LakectlError`, and
every result is one of the classes exported here (``lakectl.ShowResult``, ...).
"""

from lakectl.errors import (
    BadInputError,
    CommitConflictError,
    FormatError,
    LakectlError,
    SourceNotFoundError,
    SparkUnavailableError,
    StorageError,
    TableExistsError,
    TableNotFoundError,
    TimeTravelError,
    UnknownColumnError,
    UsageError,
)

__version__ = "0.1.0"

import typing

if typing.TYPE_CHECKING:  # what static checkers see; at run time, __getattr__
    from lakectl.api import Table as Table
    from lakectl.api import Warehouse as Warehouse
    from lakectl.api import create_table as create_table
    from lakectl.api import open_table as open_table
    from lakectl.api import open_warehouse as open_warehouse
    from lakectl.api_values import TimeLike as TimeLike
    from lakectl.ops.alter import AlterResult as AlterResult
    from lakectl.ops.changes import ChangesResult as ChangesResult
    from lakectl.ops.checkpoint import CheckpointResult as CheckpointResult
    from lakectl.ops.clean import CleanResult as CleanResult
    from lakectl.ops.compact import CompactionEntry as CompactionEntry
    from lakectl.ops.compact import Compactions as Compactions
    from lakectl.ops.compact import CompactResult as CompactResult
    from lakectl.ops.dml import DmlResult as DmlResult
    from lakectl.ops.dml import PartitionChange as PartitionChange
    from lakectl.ops.inspect import History as History
    from lakectl.ops.inspect import HistoryEntry as HistoryEntry
    from lakectl.ops.inspect import PartitionSummary as PartitionSummary
    from lakectl.ops.inspect import ShowResult as ShowResult
    from lakectl.ops.list_bucket import ListBucketResult as ListBucketResult
    from lakectl.ops.load import LoadResult as LoadResult
    from lakectl.ops.maintain import MaintainResult as MaintainResult
    from lakectl.ops.materialize import MaterializeResult as MaterializeResult
    from lakectl.ops.restore import RestoreResult as RestoreResult
    from lakectl.ops.set_properties import SetResult as SetResult
    from lakectl.ops.skew import PartitionSkew as PartitionSkew
    from lakectl.ops.skew import SkewResult as SkewResult
    from lakectl.ops.snapshot import SnapshotResult as SnapshotResult
    from lakectl.ops.stream import StreamResult as StreamResult
    from lakectl.ops.stream import StreamStatus as StreamStatus
    from lakectl.ops.tables import TablesResult as TablesResult
    from lakectl.ops.tables import TableSummary as TableSummary
    from lakectl.ops.updates import InstallResult as InstallResult
    from lakectl.ops.updates import Statements as Statements
    from lakectl.scan.statements import InstalledStatement as InstalledStatement
    from lakectl.table.schema import Schema as Schema
    from lakectl.table_reads import Changes as Changes
    from lakectl.table_reads import ChangesPlan as ChangesPlan
    from lakectl.table_reads import PlannedPartition as PlannedPartition
    from lakectl.table_reads import Scan as Scan
    from lakectl.table_reads import ScanPlan as ScanPlan

del typing

# Imported on first use, so that ``lakectl --help`` stays fast: name -> module.
_LAZY = {
    "Table": "lakectl.api",
    "Warehouse": "lakectl.api",
    "create_table": "lakectl.api",
    "open_table": "lakectl.api",
    "open_warehouse": "lakectl.api",
    "TimeLike": "lakectl.api_values",
    "Scan": "lakectl.table_reads",
    "Changes": "lakectl.table_reads",
    "ScanPlan": "lakectl.table_reads",
    "ChangesPlan": "lakectl.table_reads",
    "PlannedPartition": "lakectl.table_reads",
    "Schema": "lakectl.table.schema",
    "SnapshotResult": "lakectl.ops.snapshot",
    "ChangesResult": "lakectl.ops.changes",
    "ShowResult": "lakectl.ops.inspect",
    "PartitionSummary": "lakectl.ops.inspect",
    "History": "lakectl.ops.inspect",
    "HistoryEntry": "lakectl.ops.inspect",
    "LoadResult": "lakectl.ops.load",
    "StreamResult": "lakectl.ops.stream",
    "StreamStatus": "lakectl.ops.stream",
    "DmlResult": "lakectl.ops.dml",
    "PartitionChange": "lakectl.ops.dml",
    "RestoreResult": "lakectl.ops.restore",
    "CompactResult": "lakectl.ops.compact",
    "Compactions": "lakectl.ops.compact",
    "CompactionEntry": "lakectl.ops.compact",
    "CleanResult": "lakectl.ops.clean",
    "CheckpointResult": "lakectl.ops.checkpoint",
    "SetResult": "lakectl.ops.set_properties",
    "AlterResult": "lakectl.ops.alter",
    "InstallResult": "lakectl.ops.updates",
    "Statements": "lakectl.ops.updates",
    "InstalledStatement": "lakectl.scan.statements",
    "MaterializeResult": "lakectl.ops.materialize",
    "SkewResult": "lakectl.ops.skew",
    "PartitionSkew": "lakectl.ops.skew",
    "ListBucketResult": "lakectl.ops.list_bucket",
    "TablesResult": "lakectl.ops.tables",
    "TableSummary": "lakectl.ops.tables",
    "MaintainResult": "lakectl.ops.maintain",
}

__all__ = [
    "AlterResult",
    "BadInputError",
    "Changes",
    "ChangesPlan",
    "ChangesResult",
    "CheckpointResult",
    "CleanResult",
    "CommitConflictError",
    "CompactResult",
    "CompactionEntry",
    "Compactions",
    "DmlResult",
    "FormatError",
    "History",
    "HistoryEntry",
    "InstallResult",
    "InstalledStatement",
    "LakectlError",
    "ListBucketResult",
    "LoadResult",
    "MaintainResult",
    "MaterializeResult",
    "PartitionChange",
    "PartitionSkew",
    "PartitionSummary",
    "PlannedPartition",
    "RestoreResult",
    "Scan",
    "ScanPlan",
    "Schema",
    "SetResult",
    "ShowResult",
    "SkewResult",
    "SnapshotResult",
    "SourceNotFoundError",
    "SparkUnavailableError",
    "Statements",
    "StorageError",
    "StreamResult",
    "StreamStatus",
    "Table",
    "TableExistsError",
    "TableNotFoundError",
    "TableSummary",
    "TablesResult",
    "TimeLike",
    "TimeTravelError",
    "UnknownColumnError",
    "UsageError",
    "Warehouse",
    "__version__",
    "create_table",
    "open_table",
    "open_warehouse",
]


def __getattr__(name: str) -> object:
    """The table API and result types, imported on first use."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'lakectl' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public API (what ``__all__`` lists)."""
    return list(__all__)
