"""lakectl's one expression language: parse, bind to a schema, compile for each engine.

- :mod:`.parse` is the only module that parses user SQL (``--where``, ``--set``, defaults,
  Type 7 statements); :mod:`.check` is the whitelist every parsed tree passes;
- :mod:`.bind` applies the coercion rules and yields the typed tree of :mod:`.tree`
  (:mod:`.convert` holds the text-to-value rules shared by literals, SET and defaults;
  :mod:`.spark_values` Spark's value-by-value semantics; :mod:`.like` the LIKE rules);
- each engine compiles the tree: :mod:`lakectl.spark.compile_expr` into a Spark ``Column``,
  :mod:`lakectl.arrow.compile_expr` into a pyarrow compute expression with the same results.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from lakectl.expr.tree import Node

if TYPE_CHECKING:
    from lakectl.table.schema import Schema


@functools.lru_cache(maxsize=64)
def bind_where(where: str, schema: Schema) -> Node:
    """A read's ``--where`` checked and bound to ``schema`` (once per text and schema)."""
    from lakectl.expr.bind import Binder
    from lakectl.expr.check import check_where

    tree = check_where(where, schema)
    return Binder(schema, f"--where {where[:200]!r}").condition(tree)


__all__ = ["Node", "bind_where"]
