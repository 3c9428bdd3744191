"""Binding a checked expression to a table's schema: the coercion rules, applied once.

The binder takes a tree that passed the whitelist (:mod:`lakectl.expr.check`) and yields
the canonical typed tree (:mod:`lakectl.expr.tree`) in which every conversion is explicit. The
rules (written for users in docs/guide/expressions.md):

- Operands of a comparison, IN, BETWEEN, arithmetic, CASE, COALESCE, greatest/least take one
  common type: integers widen to the wider integer; an integer and a decimal become a decimal
  holding both; float or double with any other number becomes double (a float column compared
  with ``3.4e38`` compares in double); a date with a timestamp becomes a timestamp.
- A string literal next to a typed value is converted to that type when the expression is
  bound (:func:`lakectl.expr.convert.convert_text`), or refused naming the literal.
- A string column or expression is never compared with (or converted to) a number, boolean or
  date implicitly, and a number literal is never compared with a string: ``s = 2`` is refused
  with the hint to quote the literal. Booleans compare only with booleans.
- Integer arithmetic is done in int or bigint (tinyint and smallint widen to int); an overflow
  is an error when the row is read, not NULL. SET of a number to a narrower integer column
  (``fit``) drops a fraction (toward zero) and is the same error for a value outside the
  column's range, NaN or an infinity; a constant must be a whole number within the range. ``/`` always divides as double; division or
  modulo by zero is NULL.
- NaN equals NaN and is larger than every other number; -0.0 equals 0.0 (Spark's rules).
- NULL in an IN list makes the result NULL (not false) where no item matches, so ``NOT IN``
  with a NULL item matches nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal

from sqlglot import exp

from lakectl.errors import BadInputError
from lakectl.expr.convert import ConversionError, check_integer, convert_text, fit_decimal
from lakectl.expr.parse import DIALECT, Location
from lakectl.expr.tree import (
    FLOATING,
    INTEGRAL,
    Call,
    Col,
    Lit,
    Node,
    as_decimal,
    decimal_parts,
    decimal_type,
    is_numeric,
)
from lakectl.table.schema import Schema

SCALAR_TYPES = frozenset((*INTEGRAL, *FLOATING, "string", "boolean", "date", "timestamp"))
_COMPARISONS: dict[type[exp.Expression], str] = {
    exp.EQ: "eq",
    exp.NEQ: "neq",
    exp.LT: "lt",
    exp.LTE: "le",
    exp.GT: "gt",
    exp.GTE: "ge",
    exp.NullSafeEQ: "eq_null_safe",
}
_ARITHMETIC: dict[type[exp.Expression], str] = {
    exp.Add: "add",
    exp.Sub: "sub",
    exp.Mul: "mul",
    exp.Div: "div",
    exp.Mod: "mod",
}
_STRING_FUNCTIONS: dict[type[exp.Expression], str] = {
    exp.Upper: "upper",
    exp.Lower: "lower",
    exp.Initcap: "initcap",
    exp.Reverse: "reverse",
}
_DATE_PARTS: dict[type[exp.Expression], str] = {
    exp.Year: "year",
    exp.Month: "month",
    exp.Day: "day",
    exp.DayOfMonth: "day",
}


@dataclass(frozen=True)
class Binder:
    """Binds checked sqlglot trees over ``schema``'s columns; ``label`` starts every message."""

    schema: Schema
    label: str
    location: Location | None = None  # statements: messages name file:line:col of the node

    # entry points -------------------------------------------------------------------------

    def condition(self, tree: exp.Expression) -> Node:
        """A boolean expression (a NULL literal counts as a boolean NULL)."""
        node = self.bind(tree)
        return self.boolean(node, tree)

    def assignment(self, column: str, tree: exp.Expression) -> Node:
        """A SET value for ``column``: of the column's type, string literals converted with
        the SET rules (decimals round half up)."""
        target = self.schema[column].type
        node = self.bind(tree)
        if isinstance(node, Lit) and node.type == "string" and target != "string":
            return self.convert(node, target, tree, exact=False)
        if node.type == target:
            return node
        if node.type == "null":
            return Lit(target, None)
        if not assignable(node.type, target):
            raise self.incompatible(column, target, node, tree)
        if narrows(node.type, target) and not isinstance(node, Lit):
            return Call(target, "fit", (node,))  # checked when the row is read
        return self.cast(node, target, tree)

    # nodes ----------------------------------------------------------------------------------

    def fail(self, tree: exp.Expression | None, message: str, hint: str | None = None) -> None:
        text = tree.sql(dialect=DIALECT)[:120] if tree is not None else ""
        label = self.label
        if self.location is not None and tree is not None:
            label = self.location.of(tree)
        where = f" in {text!r}" if text and text not in label else ""
        raise BadInputError(f"{label}{where}: {message}", hint=hint)

    def bind(self, tree: exp.Expression) -> Node:
        while isinstance(tree, exp.Paren):
            tree = tree.this
        method = getattr(self, f"_{type(tree).__name__.lower()}", None)
        if method is not None:
            result: Node = method(tree)
            if isinstance(result, Lit) and not result.origin:
                result = Lit(result.type, result.value, id(tree))
            return result
        op = _COMPARISONS.get(type(tree))
        if op is not None:
            return self.compare(op, tree.this, tree.expression, tree)
        op = _ARITHMETIC.get(type(tree))
        if op is not None:
            return self.arithmetic(op, tree)
        op = _STRING_FUNCTIONS.get(type(tree))
        if op is not None:
            return Call("string", op, (self.string_arg(tree.this, tree),))
        op = _DATE_PARTS.get(type(tree))
        if op is not None:
            return Call("int", op, (self.temporal_arg(tree.this, tree),))
        self.fail(tree, f"{type(tree).__name__} cannot be used in an expression")
        raise AssertionError

    def _column(self, tree: exp.Column) -> Node:
        column = self.schema.find(tree.name)
        if column is None:
            hint = f"quote it if it is a value: '{tree.name}'"
            raise BadInputError(
                f"{self.label}: unknown column {tree.name!r}; the table's columns are: "
                f"{', '.join(self.schema.names)}",
                hint=hint,
            )
        if column.type not in SCALAR_TYPES and decimal_parts(column.type) is None:
            self.fail(tree, f"column {column.name!r} of type {column.type} cannot be used here")
        return Col(column.type, column.name)

    def _literal(self, tree: exp.Literal) -> Node:
        if tree.is_string:
            return Lit("string", str(tree.this))
        return number_literal(str(tree.this))

    def _boolean(self, tree: exp.Boolean) -> Node:
        return Lit("boolean", bool(tree.this))

    def _null(self, tree: exp.Null) -> Node:
        return Lit("null", None)

    def _neg(self, tree: exp.Neg) -> Node:
        inner = self.bind(tree.this)
        if isinstance(inner, Lit) and is_numeric(inner.type):
            value = inner.value
            assert isinstance(value, (int, float, Decimal))
            if inner.type == "decimal(19,0)" and -value == -(2**63):
                return Lit("bigint", -(2**63))
            if inner.type in INTEGRAL:  # typed by its value: -(-2147483648) is a bigint
                return number_literal(str(-value))
            return Lit(inner.type, -value)
        if not is_numeric(inner.type):
            self.fail(tree, f"- needs a number, not {inner.type}")
        widened = self.arith_widen(inner, tree)  # -(-32768) is an int, as in arithmetic
        return Call(widened.type, "neg", (widened,))

    def _not(self, tree: exp.Not) -> Node:
        return Call("boolean", "not", (self.condition(tree.this),))

    def _and(self, tree: exp.And) -> Node:
        return Call("boolean", "and", (self.condition(tree.this), self.condition(tree.expression)))

    def _or(self, tree: exp.Or) -> Node:
        return Call("boolean", "or", (self.condition(tree.this), self.condition(tree.expression)))

    def _nullsafeneq(self, tree: exp.NullSafeNEQ) -> Node:
        same = self.compare("eq_null_safe", tree.this, tree.expression, tree)
        return Call("boolean", "not", (same,))

    def _is(self, tree: exp.Is) -> Node:
        return Call("boolean", "is_null", (self.bind(tree.this),))

    def _between(self, tree: exp.Between) -> Node:
        subject, low, high = tree.this, tree.args["low"], tree.args["high"]
        nodes = [self.bind(subject), self.bind(low), self.bind(high)]
        _, (s, lo, hi) = self.unify(nodes, [subject, low, high], tree)
        above = Call("boolean", "ge", (s, lo))
        below = Call("boolean", "le", (s, hi))
        return Call("boolean", "and", (above, below))

    def _in(self, tree: exp.In) -> Node:
        items = list(tree.expressions)
        subject = self.bind(tree.this)
        bound = [self.bind(i) for i in items]
        kinds = {_kind(b) for b in bound if b.type != "null"}
        if len(kinds & {"string literal", "number literal"}) > 1:
            self.fail(
                tree,
                "the IN list mixes numbers and strings",
                hint="write every item the same way, e.g. all numbers: id IN (1, 2, 3)",
            )
        _, converted = self.unify([subject, *bound], [tree.this, *items], tree)
        subject = converted[0]
        values: list[object] = []
        others: list[Node] = []
        constants = tuple(n for n in converted[1:] if isinstance(n, Lit))
        has_null = False
        for node in converted[1:]:
            if isinstance(node, Lit):
                if node.value is None:
                    has_null = True
                else:
                    values.append(node.value)
            else:
                others.append(node)
        result: Node = Call("boolean", "in", (subject,), (tuple(values), has_null, constants))
        for other in others:
            result = Call("boolean", "or", (result, Call("boolean", "eq", (subject, other))))
        return result

    def _like(self, tree: exp.Like) -> Node:
        return self.like(tree, insensitive=False)

    def _ilike(self, tree: exp.ILike) -> Node:
        return self.like(tree, insensitive=True)

    def like(self, tree: exp.Like | exp.ILike, *, insensitive: bool) -> Node:
        pattern = tree.expression
        if not (isinstance(pattern, exp.Literal) and pattern.is_string):
            self.fail(tree, "the pattern of LIKE must be a string literal")
        subject = self.string_arg(tree.this, tree)
        node: Node = Call("boolean", "like", (subject,), (str(pattern.this), insensitive))
        if tree.args.get("negate"):
            node = Call("boolean", "not", (node,))
        return node

    def _case(self, tree: exp.Case) -> Node:
        base = tree.args.get("this")
        subject = self.bind(base) if base is not None else None
        conditions: list[Node] = []
        value_trees: list[exp.Expression] = []
        for branch in tree.args.get("ifs") or []:
            if base is not None and subject is not None:
                nodes = [subject, self.bind(branch.this)]
                _, (a, b) = self.unify(nodes, [base, branch.this], tree)
                conditions.append(Call("boolean", "eq", (a, b)))
            else:
                conditions.append(self.condition(branch.this))
            value_trees.append(branch.args["true"])
        default = tree.args.get("default")
        return self.case(conditions, value_trees, default, tree)

    def _if(self, tree: exp.If) -> Node:
        return self.case(
            [self.condition(tree.this)], [tree.args["true"]], tree.args.get("false"), tree
        )

    def case(
        self,
        conditions: list[Node],
        value_trees: list[exp.Expression],
        default: exp.Expression | None,
        tree: exp.Expression,
    ) -> Node:
        trees = [*value_trees, default if default is not None else exp.Null()]
        values = [self.bind(v) for v in trees]
        common, converted = self.unify(values, trees, tree)
        args: list[Node] = []
        for condition, value in zip(conditions, converted, strict=False):
            args += [condition, value]
        args.append(converted[-1])
        return Call(common, "case", tuple(args))

    def _coalesce(self, tree: exp.Coalesce) -> Node:
        trees = [tree.this, *tree.expressions]
        common, converted = self.unify([self.bind(t) for t in trees], trees, tree)
        return Call(common, "coalesce", tuple(converted))

    def _nullif(self, tree: exp.Nullif) -> Node:
        value = self.bind(tree.this)
        _, (a, b) = self.unify(
            [value, self.bind(tree.expression)], [tree.this, tree.expression], tree
        )
        same = Call("boolean", "eq", (a, b))
        return Call(value.type, "case", (same, Lit(value.type, None), value))

    def _greatest(self, tree: exp.Greatest) -> Node:
        return self.extreme("greatest", tree)

    def _least(self, tree: exp.Least) -> Node:
        return self.extreme("least", tree)

    def extreme(self, op: str, tree: exp.Greatest | exp.Least) -> Node:
        trees = [tree.this, *tree.expressions]
        common, converted = self.unify([self.bind(t) for t in trees], trees, tree)
        return Call(common, op, tuple(converted))

    def _cast(self, tree: exp.Cast) -> Node:
        from lakectl.expr.check import cast_target_type

        target = cast_target_type(tree)
        if target is None:
            self.fail(tree, f"CAST to {tree.to.sql(dialect=DIALECT)} is not supported")
        assert target is not None
        node = self.bind(tree.this)
        if target == "date" and (is_numeric(node.type) or node.type == "boolean"):
            self.fail(  # as Spark: a number is no date
                tree,
                f"CAST from {node.type} to date is not supported",
                hint="a number of days: date_add(CAST('1970-01-01' AS date), n)",
            )
        if isinstance(node, Lit):
            if node.type == "string":
                return self.convert(node, target, tree, exact=False)
            return self.cast(node, target, tree)
        if node.type == target:
            return node
        return Call(target, "cast", (node,))

    _trycast = _cast

    def _length(self, tree: exp.Length) -> Node:
        return Call("int", "length", (self.string_arg(tree.this, tree),))

    def _trim(self, tree: exp.Trim) -> Node:
        position = str(tree.args.get("position") or "BOTH")
        characters = tree.args.get("expression")
        if characters is not None and not (
            isinstance(characters, exp.Literal) and characters.is_string
        ):
            self.fail(tree, "the characters trim removes must be a string literal")
        removed = str(characters.this) if characters is not None else " "
        return Call("string", "trim", (self.string_arg(tree.this, tree),), (position, removed))

    def _concat(self, tree: exp.Concat) -> Node:
        return Call("string", "concat", tuple(self.string_arg(e, tree) for e in tree.expressions))

    def _dpipe(self, tree: exp.DPipe) -> Node:
        args = (self.string_arg(tree.this, tree), self.string_arg(tree.expression, tree))
        return Call("string", "concat", args)

    def _concatws(self, tree: exp.ConcatWs) -> Node:
        separator, *values = tree.expressions
        args = tuple(self.string_arg(v, tree) for v in values)
        return Call("string", "concat_ws", args, str(separator.this))

    def _replace(self, tree: exp.Replace) -> Node:
        replacement = tree.args.get("replacement")
        param = (str(tree.expression.this), str(replacement.this) if replacement else "")
        return Call("string", "replace", (self.string_arg(tree.this, tree),), param)

    def _pad(self, tree: exp.Pad) -> Node:
        from lakectl.expr.check import integer_literal

        fill = tree.args.get("fill_pattern")
        param = (
            integer_literal(tree.expression),
            str(fill.this) if fill else " ",
            tree.args.get("is_left"),
        )
        return Call("string", "pad", (self.string_arg(tree.this, tree),), param)

    def _strposition(self, tree: exp.StrPosition) -> Node:
        from lakectl.expr.check import integer_literal

        position = tree.args.get("position")
        param = (str(tree.args["substr"].this), integer_literal(position) if position else 1)
        return Call("int", "locate", (self.string_arg(tree.this, tree),), param)

    def _substring(self, tree: exp.Substring) -> Node:
        args = [self.string_arg(tree.this, tree)]
        for key in ("start", "length"):
            part = tree.args.get(key)
            if part is not None:
                args.append(self.integer_arg(part, tree))
        return Call("string", "substring", tuple(args))

    def _abs(self, tree: exp.Abs) -> Node:
        node = self.arith_widen(self.number_arg(tree.this, tree), tree)
        return Call(node.type, "abs", (node,))

    def _sign(self, tree: exp.Sign) -> Node:
        return Call(
            "double", "sign", (self.cast(self.number_arg(tree.this, tree), "double", tree),)
        )

    def _sqrt(self, tree: exp.Sqrt) -> Node:
        return Call(
            "double", "sqrt", (self.cast(self.number_arg(tree.this, tree), "double", tree),)
        )

    def _pow(self, tree: exp.Pow) -> Node:
        base = self.cast(self.number_arg(tree.this, tree), "double", tree)
        power = self.cast(self.number_arg(tree.expression, tree), "double", tree)
        return Call("double", "pow", (base, power))

    def _floor(self, tree: exp.Floor) -> Node:
        return self.rounding("floor", tree)

    def _ceil(self, tree: exp.Ceil) -> Node:
        return self.rounding("ceil", tree)

    def rounding(self, op: str, tree: exp.Floor | exp.Ceil) -> Node:
        node = self.number_arg(tree.this, tree)
        parts = decimal_parts(node.type)
        if parts is not None:
            return Call(decimal_type(min(38, parts[0] - parts[1] + 1), 0), op, (node,))
        return Call("bigint", op, (node,))

    def _round(self, tree: exp.Round) -> Node:
        from lakectl.expr.check import integer_literal

        node = self.number_arg(tree.this, tree)
        decimals = tree.args.get("decimals")
        scale = integer_literal(decimals) if decimals is not None else 0
        assert scale is not None
        parts = decimal_parts(node.type)
        result = node.type
        if parts is not None:
            new_scale = max(0, min(parts[1], scale))
            result = decimal_type(min(38, parts[0] - parts[1] + 1 + new_scale), new_scale)
        return Call(result, "round", (node,), scale)

    def _tsordsadd(self, tree: exp.TsOrDsAdd) -> Node:
        day = self.date_arg(tree.this, tree)
        return Call("date", "date_add", (day, self.integer_arg(tree.expression, tree)))

    def _datediff(self, tree: exp.DateDiff) -> Node:
        end, start = self.date_arg(tree.this, tree), self.date_arg(tree.expression, tree)
        return Call("int", "datediff", (end, start))

    def _tsordstodate(self, tree: exp.TsOrDsToDate) -> Node:
        if tree.args.get("format") is not None:
            self.fail(tree, "to_date takes one argument")
        return self.date_arg(tree.this, tree)

    # argument kinds -------------------------------------------------------------------------

    def string_arg(self, tree: exp.Expression, parent: exp.Expression) -> Node:
        node = self.bind(tree)
        if node.type in ("string", "null"):
            return node if node.type == "string" else Lit("string", None)
        if node.type in INTEGRAL or node.type in ("date", "boolean"):
            return self.cast(node, "string", parent)
        self.fail(
            parent,
            f"{tree.sql(dialect=DIALECT)} is {node.type}, not a string",
            hint=f"convert it: CAST({tree.sql(dialect=DIALECT)} AS string)",
        )
        raise AssertionError

    def number_arg(self, tree: exp.Expression, parent: exp.Expression) -> Node:
        return self.as_number(self.bind(tree), tree, parent)

    def as_number(self, node: Node, tree: exp.Expression, parent: exp.Expression) -> Node:
        """A bound operand as a number (a string literal as the number it spells)."""
        if is_numeric(node.type):
            return node
        if node.type == "null":
            return Lit("double", None)
        if isinstance(node, Lit) and node.type == "string":
            return self.literal_number(node, parent)
        self.fail(parent, f"{tree.sql(dialect=DIALECT)} is {node.type}, not a number")
        raise AssertionError

    def integer_arg(self, tree: exp.Expression, parent: exp.Expression) -> Node:
        return self.as_integer(self.bind(tree), tree, parent)

    def as_integer(self, bound: Node, tree: exp.Expression, parent: exp.Expression) -> Node:
        """A bound operand as an int (a bigint is cast)."""
        node = self.as_number(bound, tree, parent)
        if node.type not in INTEGRAL:
            self.fail(parent, f"{tree.sql(dialect=DIALECT)} must be an integer")
        return self.cast(node, "int", parent) if node.type == "bigint" else node

    def temporal_arg(self, tree: exp.Expression, parent: exp.Expression) -> Node:
        node = self.bind(tree)
        if node.type in ("date", "timestamp"):
            return node
        return self.date_arg(tree, parent, node)

    def date_arg(
        self, tree: exp.Expression, parent: exp.Expression, node: Node | None = None
    ) -> Node:
        node = node or self.bind(tree)
        if node.type == "date":
            return node
        if node.type == "null":
            return Lit("date", None)
        if isinstance(node, Lit) and node.type == "string":
            return self.convert(node, "date", parent, exact=False)
        if node.type == "timestamp":
            return Call("date", "cast", (node,))
        self.fail(parent, f"{tree.sql(dialect=DIALECT)} is {node.type}, not a date")
        raise AssertionError

    def boolean(self, node: Node, tree: exp.Expression) -> Node:
        if node.type == "boolean":
            return node
        if node.type == "null":
            return Lit("boolean", None)
        self.fail(
            tree,
            f"{tree.sql(dialect=DIALECT)} is {node.type}, not a condition",
            hint="compare it: store_id = 'S01'",
        )
        raise AssertionError

    # comparisons and arithmetic ------------------------------------------------------------

    def compare(
        self, op: str, left: exp.Expression, right: exp.Expression, tree: exp.Expression
    ) -> Node:
        nodes = [self.bind(left), self.bind(right)]
        _, (a, b) = self.unify(nodes, [left, right], tree)
        return Call("boolean", op, (a, b))

    def arithmetic(self, op: str, tree: exp.Expression) -> Node:
        left, right = tree.this, tree.expression
        bound_left, bound_right = self.bind(left), self.bind(right)  # once: trees nest deeply
        if op in ("add", "sub"):
            moved = self.date_shift(op, bound_left, bound_right, (left, right), tree)
            if moved is not None:
                return moved
        a = self.as_number(bound_left, left, tree)
        b = self.as_number(bound_right, right, tree)
        if isinstance(a, Lit) and isinstance(b, Lit) and a.type == "string" == b.type:
            self.fail(tree, "arithmetic needs numbers")
        if op == "div":
            return Call(
                "double", "div", (self.cast(a, "double", tree), self.cast(b, "double", tree))
            )
        common, (a, b) = self.unify(
            [self.arith_widen(a, tree), self.arith_widen(b, tree)], [left, right], tree
        )
        if decimal_parts(common) is not None:
            pa_, pb_ = as_decimal(a.type), as_decimal(b.type)
            assert pa_ is not None and pb_ is not None
            if op == "mod":  # Spark's: the remainder is smaller than either operand
                scale = max(pa_[1], pb_[1])
                precision = min(pa_[0] - pa_[1], pb_[0] - pb_[1]) + scale
            elif op == "mul":
                precision, scale = pa_[0] + pb_[0] + 1, pa_[1] + pb_[1]
            else:
                scale = max(pa_[1], pb_[1])
                precision = scale + max(pa_[0] - pa_[1], pb_[0] - pb_[1]) + 1
            if precision > 38:  # Spark's rule: keep the integer digits, round the fraction
                integer_digits = precision - scale
                scale = max(38 - integer_digits, min(scale, 6))
                return Call(decimal_type(38, scale), op, (a, b), "rounded")
            common = decimal_type(precision, scale)
        return Call(common, op, (a, b))

    def date_shift(
        self,
        op: str,
        a: Node,
        b: Node,
        trees: tuple[exp.Expression, exp.Expression],
        tree: exp.Expression,
    ) -> Node | None:
        """``date + n``, ``n + date`` and ``date - n``: the date ``n`` days later or earlier
        (as date_add and date_sub); None for other operands."""
        if a.type != "date" and not (op == "add" and b.type == "date"):
            return None
        day, days, days_tree = (a, b, trees[1]) if a.type == "date" else (b, a, trees[0])
        count = self.as_integer(days, days_tree, tree)
        if op == "sub":
            count = (
                Lit(count.type, -count.value)  # type: ignore[operator]
                if isinstance(count, Lit) and count.value is not None
                else Call(count.type, "neg", (count,))
            )
        return Call("date", "date_add", (day, count))

    def arith_widen(self, node: Node, tree: exp.Expression) -> Node:
        if node.type in ("tinyint", "smallint"):
            return self.cast(node, "int", tree)
        return node

    # coercion ------------------------------------------------------------------------------

    def unify(
        self, nodes: list[Node], trees: list[exp.Expression], tree: exp.Expression
    ) -> tuple[str, list[Node]]:
        """The common type of ``nodes`` and each of them converted to it."""
        original = nodes
        fixed = [n for n in nodes if not _adaptable(n)]
        if fixed:
            common = self.common_type([n.type for n in fixed], trees, parent=tree, nodes=nodes)
        elif any(n.type == "string" for n in nodes):
            common = "string"
        else:
            common = "null"
        if decimal_parts(common) is not None:
            # string literals next to decimals take part as the numbers they spell
            nodes = [
                self.literal_number(n, tree) if isinstance(n, Lit) and n.type == "string" else n
                for n in nodes
            ]
            nodes = [
                Lit(n.type, n.value, o.origin) if isinstance(n, Lit) and isinstance(o, Lit) else n
                for n, o in zip(nodes, original, strict=True)
            ]
            common = self.common_type(
                [n.type for n in nodes if n.type != "null"], trees, parent=tree
            )
        converted: list[Node] = []
        for node in nodes:
            if isinstance(node, Lit) and node.type == "string" and common != "string":
                converted.append(self.convert(node, common, tree, exact=True))
            elif common == "null":
                converted.append(node)
            else:
                converted.append(self.cast(node, common, tree))
        return common, converted

    def common_type(
        self,
        types: list[str],
        trees: list[exp.Expression],
        *,
        parent: exp.Expression | None = None,
        nodes: list[Node] | None = None,
    ) -> str:
        distinct = list(dict.fromkeys(types))  # an IN list of thousands has a few types
        result = distinct[0]
        for other in distinct[1:]:
            widened = wider(result, other)
            if widened is None:
                self.refuse_mix(result, other, parent, nodes or [])
            assert widened is not None
            result = widened
        return result

    def refuse_mix(self, a: str, b: str, tree: exp.Expression | None, nodes: list[Node]) -> None:
        types = {a, b}
        hint = None
        number = next((n for n in nodes if isinstance(n, Lit) and is_numeric(n.type)), None)
        if "string" in types and number is not None:
            text = tree.sql(dialect=DIALECT) if tree is not None else ""
            shown = _shown(number)
            hint = (
                f"quote the literal: {text.replace(shown, repr(str(shown)), 1)}"
                if shown in text
                else "quote the literal"
            )
        elif "string" in types:
            hint = "convert one side: CAST(column AS string) or CAST(column AS <type>)"
        elif "boolean" in types:
            hint = "compare booleans with true or false"
        self.fail(tree, f"cannot compare or combine {a} with {b}", hint=hint)

    def incompatible(
        self, column: str, target: str, node: Node, tree: exp.Expression
    ) -> BadInputError:
        hint = (
            f"quote the literal: {column} = '{_shown(node)}'"
            if isinstance(node, Lit) and target == "string"
            else f"convert it: CAST(... AS {target})"
        )
        return BadInputError(
            f"{self.label}: cannot set column {column!r} ({target}) to "
            f"{tree.sql(dialect=DIALECT)[:120]} ({node.type})",
            hint=hint,
        )

    def literal_number(self, node: Lit, tree: exp.Expression) -> Lit:
        text = str(node.value).strip()
        try:
            convert_text(text, "double")
        except ConversionError:
            self.fail(tree, f"{node.value!r} is not a number")
        if text.lstrip("+-").lower() in ("nan", "inf", "infinity"):
            return Lit("double", convert_text(text, "double"))
        return number_literal(text)

    def convert(self, node: Lit, target: str, tree: exp.Expression, *, exact: bool) -> Lit:
        """A string literal as a value of ``target``."""
        if node.value is None:
            return Lit(target, None, node.origin)
        try:
            value = convert_text(str(node.value), target, exact=exact)
        except ConversionError as exc:
            self.fail(tree, f"{node.value!r} is not a {target} value: {exc}")
            raise AssertionError from exc
        return Lit(target, value, node.origin)

    def cast(self, node: Node, target: str, tree: exp.Expression) -> Node:
        """``node`` as ``target`` (a constant is converted now)."""
        if node.type == target:
            return node
        if isinstance(node, Lit):
            if node.value is None:
                return Lit(target, None, node.origin)
            try:
                return Lit(target, cast_value(node.value, node.type, target), node.origin)
            except ConversionError as exc:
                self.fail(tree, f"{_shown(node)} as {target}: {exc}")
        return Call(target, "cast", (node,))


def _adaptable(node: Node) -> bool:
    """A NULL or a string literal: takes the type of what it meets."""
    return isinstance(node, Lit) and node.type in ("null", "string")


def _kind(node: Node) -> str:
    if isinstance(node, Lit):
        return (
            "string literal"
            if node.type == "string"
            else "number literal"
            if is_numeric(node.type)
            else node.type
        )
    return node.type


def _shown(node: Node) -> str:
    return str(node.value) if isinstance(node, Lit) else ""


def wider(a: str, b: str) -> str | None:
    """The common type of ``a`` and ``b`` under the rules above, None when they do not mix."""
    if a == b:
        return a
    if "null" in (a, b):
        return b if a == "null" else a
    if is_numeric(a) and is_numeric(b):
        if a in FLOATING or b in FLOATING:
            return "double"
        da, db = as_decimal(a), as_decimal(b)
        assert da is not None and db is not None
        if decimal_parts(a) is None and decimal_parts(b) is None:
            return a if INTEGRAL.index(a) > INTEGRAL.index(b) else b
        scale = max(da[1], db[1])
        digits = max(da[0] - da[1], db[0] - db[1])
        if digits + scale > 38:
            scale = max(0, 38 - digits)
        return decimal_type(min(38, digits + scale), scale)
    if {a, b} == {"date", "timestamp"}:
        return "timestamp"
    return None


def assignable(source: str, target: str) -> bool:
    """Whether SET may store a value of ``source`` in a column of ``target``: numbers into
    numbers (checked against the target's range), booleans and numbers into each other (1/0),
    integers, decimals, dates and booleans into strings (their text is the same in every
    engine; a double is not: quote it), dates and timestamps into each other."""
    if source == target or source == "null":
        return True
    if is_numeric(source) and is_numeric(target):
        return True
    if "boolean" in (source, target) and (is_numeric(source) or is_numeric(target)):
        return True
    if target == "string":
        return source in INTEGRAL or source in ("date", "boolean") or source.startswith("decimal(")
    return {source, target} == {"date", "timestamp"}


def narrows(source: str, target: str) -> bool:
    """Whether a number of ``source`` stored into an integer ``target`` may not fit it (a
    wider integer, a decimal or a floating-point number)."""
    if target not in INTEGRAL or not is_numeric(source):
        return False
    return source not in INTEGRAL or INTEGRAL.index(source) > INTEGRAL.index(target)


def number_literal(text: str) -> Lit:
    """A number as Spark types it: int, bigint, an exact decimal, or double with an exponent."""
    body = text.lstrip("+-")
    if body.isdigit() and body.isascii():
        value = int(text)
        if -(2**31) <= value < 2**31:
            return Lit("int", value)
        if -(2**63) <= value < 2**63:
            return Lit("bigint", value)
        width = len(body.lstrip("0")) or 1
        return Lit(decimal_type(width, 0), Decimal(value))
    if "e" in body.lower():
        return Lit("double", float(text))
    number = Decimal(text)
    _, figures, exponent = number.as_tuple()
    assert isinstance(exponent, int)
    scale = max(0, -exponent)
    precision = max(len(figures), scale, 1)
    return Lit(decimal_type(min(38, precision), min(scale, 38)), number)


def cast_value(value: object, source: str, target: str) -> object:
    """A constant of ``source`` converted to ``target`` (numbers widen exactly; dates to
    timestamps at midnight UTC). Raises :class:`ConversionError` when it does not fit."""
    if target == "string":
        if source == "boolean":
            return "true" if value else "false"
        return value.isoformat() if isinstance(value, date) else str(value)
    if target == "boolean":
        if isinstance(value, (int, float, Decimal)):
            return value != 0
        raise ConversionError(f"{source} cannot be converted to boolean")
    if isinstance(value, bool) and is_numeric(target):
        value = int(value)
    if target in FLOATING:
        return float(value)  # type: ignore[arg-type]
    if target in INTEGRAL:
        if isinstance(value, float) and not math.isfinite(value):
            raise ConversionError("not a finite number")
        if isinstance(value, (float, Decimal)) and value != int(value):
            raise ConversionError("not an integer")
        return check_integer(int(value), target)  # type: ignore[call-overload]
    parts = decimal_parts(target)
    if parts is not None:
        number = Decimal(str(value)) if isinstance(value, float) else Decimal(value)  # type: ignore[arg-type]
        return fit_decimal(number, parts, exact=False)
    if target == "timestamp" and isinstance(value, date) and not isinstance(value, datetime):
        return datetime(value.year, value.month, value.day)
    if target == "date" and isinstance(value, datetime):
        return value.date()
    if source == target:
        return value
    raise ConversionError(f"{source} cannot be converted to {target}")


__all__ = ["Binder", "assignable", "cast_value", "narrows", "number_literal", "wider"]
