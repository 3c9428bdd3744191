"""Hashing the string columns many statements test, once per row (pure, no Spark).

Statements often select rows by a string attribute that none of them changes::

    UPDATE t SET payment = 'WIRE' WHERE store = 'S017';
    DELETE FROM t WHERE store = 'S042' AND amount < 3;

Applied one after the other, every row meets every statement's test, and comparing two strings
of the same length reads their bytes: at 10M rows and 14 tests of a 4-byte column, that was a
third of what 100 statements cost. A string column tested for (in)equality with a literal at
least :data:`MIN_TESTS` times, and written by no statement, gets a helper column with its hash
(NULL for NULL), and ``col = 'lit'`` is written ``(h = hash('lit') AND col = 'lit')``: an
integer test that rejects almost every row without reading the string, with the same
three-valued result (NULL for a NULL column; the string test decides where hashes collide).

The same idea for point statements (one lookup of the key in the set of every key they name, in
front of each run's own ``key IN (...)``) was measured and is not used: 100 statements at 10M
rows cost 1.81x a plain read with it, 1.66x without (the runs' own tests are short ``IN`` lists
of longs, and the extra column changed how Spark's generated code is split).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from lakectl.expr.check import CheckedStatement
from lakectl.expr.tree import Call, Col, Lit, Node, walk
from lakectl.table.schema import Schema
from lakectl.updates.keyed import keyed_form

# Below this many tests of one column, hashing it costs about what it saves.
MIN_TESTS = 4


def string_equality(node: Node) -> tuple[Col, Lit] | None:
    """The string column and (non-NULL) string constant of a bound ``col = 'lit'`` or
    ``col <> 'lit'`` (either side), or ``None``."""
    if not isinstance(node, Call) or node.op not in ("eq", "neq"):
        return None
    left, right = node.args
    if isinstance(right, Col) and isinstance(left, Lit):
        left, right = right, left
    if (
        isinstance(left, Col)
        and left.type == "string"
        and isinstance(right, Lit)
        and isinstance(right.value, str)
    ):
        return left, right
    return None


def hashed_columns(
    statements: Sequence[CheckedStatement], schema: Schema, *, keyed: bool
) -> tuple[str, ...]:
    """The schema names of the string columns to hash for ``statements``: written by none of
    them and tested for (in)equality with a string literal at least :data:`MIN_TESTS` times.
    With ``keyed``, point statements are not counted (they compile to hash-set tests of their
    own, :mod:`lakectl.updates.keyed`)."""
    written = {name.lower() for s in statements for name, _ in s.values}
    tests: Counter[str] = Counter()
    for stmt in statements:
        if keyed and keyed_form(stmt, schema) is not None:
            continue
        roots = [value for _, value in stmt.values]
        if stmt.condition is not None:
            roots.append(stmt.condition)
        for node in (n for root in roots for n in walk(root)):
            match = string_equality(node)
            found = None if match is None else schema.find(match[0].name)
            if found is not None:
                tests[found.name] += 1
    return tuple(n for n, c in tests.items() if c >= MIN_TESTS and n.lower() not in written)


__all__ = ["MIN_TESTS", "hashed_columns", "string_equality"]
