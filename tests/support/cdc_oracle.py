"""An independent engine for load semantics: the same batches applied by DuckDB SQL.

The documented rules (``lakectl load --help`` and docs/guide/loading.md):

* within a batch, the last change per key wins: by the order column, then by file position;
* a change applies only when the stored row is absent or its order value is strictly older;
* an insert or update of a missing key inserts it; of a present key, it replaces the row;
* a delete of a missing key, or any change not newer than the stored row, is ignored;
* ``upsert`` is ``cdc`` where every row is an insert/update; ``append`` inserts every row.

DuckDB reads the CSV itself (RFC 4180), so parsing is checked too.
"""

from __future__ import annotations

from typing import Any

import duckdb


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class CdcOracle:
    """A table in DuckDB with ``key`` columns, loaded batch by batch like ``lakectl load``."""

    def __init__(
        self,
        columns: dict[str, str],
        key: tuple[str, ...] = (),
        order_by: str | None = None,
        op_column: str | None = None,
        op_values: dict[str, str] | None = None,
    ) -> None:
        self.columns = columns  # name -> DuckDB type, in table order
        self.key = key
        self.order_by = order_by
        self.op_column = op_column
        self.op_values = op_values or {"I": "insert", "U": "update", "D": "delete"}
        self.db = duckdb.connect()
        # One thread keeps the CSV's row order as the table's rowid order (file position).
        self.db.execute("SET threads = 1")
        self.db.execute("SET preserve_insertion_order = true")
        ddl = ", ".join(f"{_q(c)} {t}" for c, t in columns.items())
        self.db.execute(f"CREATE TABLE state ({ddl})")

    def _stage(self, path: str) -> None:
        types = dict(self.columns)
        if self.op_column:
            types[self.op_column] = "VARCHAR"
        spec = "{" + ", ".join(f"'{c}': '{t}'" for c, t in types.items()) + "}"
        self.db.execute("DROP TABLE IF EXISTS stage")
        self.db.execute(
            f"CREATE TABLE stage AS SELECT * FROM read_csv(?, header = true, types = {spec}, "
            "delim = ',', quote = '\"', escape = '\"')",
            [path],
        )

    def apply_csv(self, path: str, mode: str) -> dict[str, int]:
        """Apply one batch file; return lakectl's counts for it."""
        self._stage(path)
        cols = ", ".join(_q(c) for c in self.columns)
        total = self.db.execute("SELECT count(*) FROM stage").fetchone()[0]
        if mode == "append":
            self.db.execute(f"INSERT INTO state SELECT {cols} FROM stage")
            return {"inserted": total}
        key_match = " AND ".join(f"l.{_q(k)} = s.{_q(k)}" for k in self.key)
        partition = ", ".join(_q(k) for k in self.key)
        order = f"{_q(self.order_by)} DESC, " if self.order_by else ""
        self.db.execute("DROP TABLE IF EXISTS latest")
        self.db.execute(
            f"CREATE TABLE latest AS SELECT * FROM (SELECT *, rowid AS __pos FROM stage) "
            f"QUALIFY row_number() OVER (PARTITION BY {partition} ORDER BY {order}__pos DESC) = 1"
        )
        if self.order_by:
            newer = (
                f"(s.{_q(self.order_by)} IS NULL OR l.{_q(self.order_by)} > s.{_q(self.order_by)})"
            )
        else:
            newer = "TRUE"
        present = f"s.{_q(self.key[0])} IS NOT NULL"
        if mode == "cdc":
            deletes = [c for c, action in self.op_values.items() if action == "delete"]
            codes = ", ".join("'" + c.replace("'", "''") + "'" for c in deletes) or "NULL"
            is_delete = f"l.{_q(self.op_column or 'op_code')} IN ({codes})"
        else:
            is_delete = "FALSE"
        self.db.execute("DROP TABLE IF EXISTS classified")
        self.db.execute(
            f"""CREATE TABLE classified AS
            SELECT l.*, CASE
                WHEN {is_delete} THEN CASE WHEN {present} AND {newer} THEN 'delete' ELSE 'ignored' END
                WHEN NOT ({present}) THEN 'insert'
                WHEN {newer} THEN 'update'
                ELSE 'ignored' END AS __result
            FROM latest l LEFT JOIN state s ON {key_match}"""
        )
        self.db.execute(
            f"DELETE FROM state AS s WHERE EXISTS (SELECT 1 FROM classified AS l "
            f"WHERE {key_match} AND l.__result IN ('update', 'delete'))"
        )
        self.db.execute(
            f"INSERT INTO state SELECT {cols} FROM classified WHERE __result IN ('insert', 'update')"
        )
        by_result = dict(
            self.db.execute("SELECT __result, count(*) FROM classified GROUP BY 1").fetchall()
        )
        latest = self.db.execute("SELECT count(*) FROM latest").fetchone()[0]
        return {
            "inserted": by_result.get("insert", 0),
            "updated": by_result.get("update", 0),
            "deleted": by_result.get("delete", 0),
            "ignored": by_result.get("ignored", 0),
            "superseded_in_batch": total - latest,
        }

    def rows(self) -> list[dict[str, Any]]:
        cursor = self.db.execute(f"SELECT {', '.join(_q(c) for c in self.columns)} FROM state")
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, r, strict=True)) for r in cursor.fetchall()]
