"""lakectl: maintenance for Hive-ACID-layout data lakes, as a library and a command line.

```python
import lakectl

t = lakectl.open_table("sales", warehouse="./warehouse")
t.load("batch.csv", mode="cdc", op_column="op_code", order_by="change_ts")
df = t.to_spark(as_of="2024-06-01")
```

See :mod:`lakectl.api` for the table object; every error is a :class:`LakectlError`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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
    UsageError,
)

__version__ = "0.1.0"

if TYPE_CHECKING:
    from lakectl.api import Table as Table
    from lakectl.api import Warehouse as Warehouse
    from lakectl.api import create_table as create_table
    from lakectl.api import open_table as open_table
    from lakectl.api import open_warehouse as open_warehouse

__all__ = [
    "BadInputError",
    "CommitConflictError",
    "FormatError",
    "LakectlError",
    "SourceNotFoundError",
    "SparkUnavailableError",
    "StorageError",
    "Table",
    "TableExistsError",
    "TableNotFoundError",
    "TimeTravelError",
    "UsageError",
    "Warehouse",
    "__version__",
    "create_table",
    "open_table",
    "open_warehouse",
]


def __getattr__(name: str) -> Any:
    """Import the table API on first use, so that ``lakectl --help`` stays fast."""
    if name in ("Table", "Warehouse", "create_table", "open_table", "open_warehouse"):
        from lakectl import api

        return getattr(api, name)
    raise AttributeError(f"module 'lakectl' has no attribute {name!r}")
