"""A table pinned to one state of its log: what :class:`lakectl.Table` reads through.

A :class:`PinnedStore` answers :meth:`~lakectl.table.store.TableStore.read_state` with the
state it was given instead of reading the log again, so that every read of one
:class:`lakectl.Table` (its properties, scans, change feeds, history, ``show``) sees the same
version until the table is refreshed; a :class:`PinnedContext` hands that store to the
operations, which take a context and a table reference. Writes never use them: a commit is
always based on the newest state.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lakectl.ops.context import Context
from lakectl.table.log import TableState
from lakectl.table.store import TableStore

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@dataclass
class PinnedStore(TableStore):
    """A table store whose log state is fixed: :meth:`read_state` returns ``pinned``."""

    pinned: TableState = field(default_factory=lambda: TableState(()), compare=False, repr=False)

    def read_state(self) -> TableState:
        """The pinned state (the log is not read)."""
        return self.pinned


class PinnedContext(Context):
    """``parent``'s configuration, Spark session and progress, with :meth:`table` returning
    the pinned ``store`` (the one table the operation reads)."""

    def __init__(self, parent: Context, store: TableStore) -> None:
        super().__init__(config=parent.config, progress=parent.progress)
        self._parent = parent
        self._store = store

    def table(self, ref: str | None) -> TableStore:
        """The pinned store, whatever ``ref`` (the operation's own table)."""
        return self._store

    def use_spark(self, session: SparkSession) -> None:
        """Run jobs in ``session``: set on the parent context."""
        self._parent.use_spark(session)

    def spark(self) -> SparkSession:
        """The parent context's session (started there when needed)."""
        return self._parent.spark()


def pin(store: TableStore, state: TableState) -> PinnedStore:
    """``store`` with its log state fixed at ``state``."""
    return PinnedStore(store.storage, store.root, store.name, pinned=state)
