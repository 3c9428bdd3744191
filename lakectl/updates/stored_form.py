"""The parsed form of an installed statement, stored beside its text so that reads do not parse
it again.

Parsing a statement with sqlglot costs milliseconds (a second for an ``IN`` list of 30,000
keys), and every read of a table checks every installed statement. ``apply-updates`` therefore
stores, with each statement's text, its syntax tree in a compact JSON form (:func:`encode_tree`);
a reader rebuilds the tree from it (:func:`decode_tree`) instead of parsing the text.

The stored form is table content like the text, so it is trusted no more: the decoder accepts
only the node types and arguments a checked statement can hold, within bounds on size and
depth, and anything else makes it return ``None`` (the reader then parses the text). The tree it
returns goes through the same whitelist check as a parsed one, and is used only when it renders
to exactly the stored text (:func:`lakectl.updates.validate.remember_parse`), so what
``lakectl updates`` shows is still what runs.

Form (JSON, stored as one string): a number literal is its text (a JSON string); ``{"s": text}`` a string literal,
``{"i": name}`` / ``{"q": name}`` an unquoted / quoted identifier, ``{"": "Class", arg: value,
...}`` any other node; argument values are nodes, JSON arrays of nodes, booleans, ``{"f": text}``
(a keyword such as ``LEADING``) or ``{"d": name}`` (a data type).
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

from sqlglot import exp

from lakectl.expr.check import MAX_DEPTH, RULES
from lakectl.expr.parse import MAX_STATEMENT_CHARS

# Nodes a statement holds besides the expression whitelist.
_STRUCTURE: tuple[type[exp.Expression], ...] = (
    exp.Update,
    exp.Delete,
    exp.Table,
    exp.TableAlias,
    exp.Identifier,
    exp.Where,
    exp.DataType,
    exp.DataTypeParam,
    exp.Var,  # a fixed keyword argument, such as date_add's DAY
)
_CLASSES: dict[str, type[exp.Expression]] = {cls.__name__: cls for cls in (*RULES, *_STRUCTURE)}
_KNOWN = frozenset(_CLASSES.values())
# Bounds on what a stored form may hold: a statement passing the checks stays well inside them
# (its text is at most MAX_STATEMENT_CHARS characters, each node takes at least two).
MAX_NODES = MAX_STATEMENT_CHARS
MAX_FORM_CHARS = 8 * MAX_STATEMENT_CHARS
MAX_TEXT = 2 * MAX_STATEMENT_CHARS
_MAX_FORM_DEPTH = MAX_DEPTH + 8


class _Unstorable(Exception):
    """A tree (or a stored form) outside what this format holds."""


def encode_tree(tree: exp.Expression) -> str | None:
    """The stored form of ``tree`` (a parsed statement) as compact JSON text (one string in
    the log record, about as long as the statement's text, however the record is indented),
    or ``None`` when the tree holds something the form does not (readers then parse the
    statement's text)."""
    try:
        return json.dumps(_encode(tree, 0), separators=(",", ":"), ensure_ascii=False)
    except (_Unstorable, RecursionError):
        return None


def _encode(node: exp.Expression, depth: int) -> Any:
    if depth > _MAX_FORM_DEPTH or type(node) not in _KNOWN:
        raise _Unstorable
    args = {k: v for k, v in node.args.items() if v is not None and v != []}
    if isinstance(node, exp.Literal) and set(args) <= {"this", "is_string"}:
        text = node.this
        if isinstance(text, str):
            return {"s": text} if node.is_string else text
    plain_name = isinstance(node, exp.Identifier) and set(args) <= {"this", "quoted"}
    if plain_name and isinstance(node.this, str):
        return {"q" if node.args.get("quoted") else "i": node.this}
    out: dict[str, Any] = {"": type(node).__name__}
    for key, value in args.items():
        out[key] = _encode_arg(value, depth)
    return out


def _encode_arg(value: object, depth: int) -> Any:
    if isinstance(value, exp.Expression):
        return _encode(value, depth + 1)
    if isinstance(value, list):
        return [_encode_arg_node(v, depth) for v in value]
    if isinstance(value, bool):
        return value
    if isinstance(value, exp.DataType.Type):
        return {"d": value.name}
    if isinstance(value, str):
        return {"f": value}
    raise _Unstorable


def _encode_arg_node(value: object, depth: int) -> Any:
    if not isinstance(value, exp.Expression):
        raise _Unstorable
    return _encode(value, depth + 1)


def decode_tree(stored: object) -> exp.Expression | None:
    """The tree a stored form (the JSON text :func:`encode_tree` makes) describes, or ``None``
    when it is damaged: not such a text, longer than any statement's form, a node type or
    argument a statement cannot hold, a wrong JSON type, or more nodes, text or depth than
    any statement has."""
    if not isinstance(stored, str) or len(stored) > MAX_FORM_CHARS:
        return None
    decoder = _Decoder()
    try:
        node = decoder.node(json.loads(stored), 0)
    except (_Unstorable, RecursionError, TypeError, ValueError, KeyError):
        return None
    return node if isinstance(node, exp.Update | exp.Delete) else None


# How tightly the parser binds each operator (higher: tighter); anything else is an atom.
_ATOM = 10
_LEVELS: dict[type, int] = {
    exp.Or: 1,
    exp.And: 2,
    exp.Not: 3,
    **dict.fromkeys(
        (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.NullSafeEQ, exp.NullSafeNEQ), 4
    ),
    **dict.fromkeys((exp.In, exp.Between, exp.Like, exp.ILike, exp.Is), 5),
    **dict.fromkeys((exp.Add, exp.Sub), 6),
    **dict.fromkeys((exp.Mul, exp.Div, exp.Mod), 7),
    exp.DPipe: 8,
    exp.Neg: 9,
}
# The least level an operand of each operator level (by argument) may have without parentheses,
# as the parser builds trees; a left operand (``this``) may also be of the operator's own level
# (left associative, except unary minus). Arguments of functions, CASE, CAST, IN lists and
# parentheses are delimited: any level.
_OPERANDS: dict[int, tuple[int, frozenset[str]]] = {
    1: (2, frozenset({"this", "expression"})),
    2: (3, frozenset({"this", "expression"})),
    3: (4, frozenset({"this"})),
    4: (6, frozenset({"this", "expression"})),
    5: (6, frozenset({"this", "low", "high", "expression"})),
    6: (7, frozenset({"this", "expression"})),
    7: (9, frozenset({"this", "expression"})),
    8: (9, frozenset({"this", "expression"})),
    9: (_ATOM, frozenset({"this"})),
}
_NUMBER = re.compile(r"(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _misshaped(node: exp.Expression) -> bool:
    """Whether the parser could not have built ``node`` from its rendering (its operands
    already checked): an operand that binds more loosely than the operator without
    parentheses, a number literal or unquoted name that is not one plain token. Two trees the
    parser builds and that render the same text mean the same; a stored ``a - (b - c)``
    without its parentheses renders ``a - b - c``, which means something else."""
    if isinstance(node, exp.Literal):
        return not node.is_string and not _NUMBER.fullmatch(str(node.this))
    if isinstance(node, exp.Identifier):
        name = str(node.this)
        quoted = node.args.get("quoted")
        return not quoted and (not _NAME.fullmatch(name) or name.upper() in _keywords())
    level = _LEVELS.get(node.__class__)
    if level is None:
        return False
    least, operands = _OPERANDS[level]
    for key in operands:
        child = node.args.get(key)
        if not isinstance(child, exp.Expression):
            continue
        child_level = _LEVELS.get(child.__class__, _ATOM)
        if child_level < least and not (key == "this" and child_level == level != 9):
            return True
    return False


@functools.cache
def _keywords() -> frozenset[str]:
    from lakectl.expr.parse import DIALECT

    return frozenset(k.upper() for k in DIALECT.Tokenizer.KEYWORDS)


class _Decoder:
    """Builds a tree from a stored form; with ``shaped``, refuses trees the parser would not
    build (:func:`_misshaped`)."""

    def __init__(self, shaped: bool = True) -> None:
        self.nodes = 0
        self.text = 0
        self.shaped = shaped

    def _count(self, text: str) -> str:
        self.nodes += 1
        self.text += len(text)
        if self.nodes > MAX_NODES or self.text > MAX_TEXT:
            raise _Unstorable
        return text

    def node(self, form: object, depth: int, assignment: bool = False) -> exp.Expression:
        """The node ``form`` describes; ``assignment``: a SET ``column = value`` (the value
        is delimited, whatever it binds)."""
        built = self._build(form, depth)
        if self.shaped and not assignment and _misshaped(built):
            raise _Unstorable
        return built

    def _build(self, form: object, depth: int) -> exp.Expression:
        if depth > _MAX_FORM_DEPTH:
            raise _Unstorable
        if isinstance(form, str):
            return exp.Literal(this=self._count(form), is_string=False)
        if not isinstance(form, dict):
            raise _Unstorable
        if len(form) == 1:
            ((tag, text),) = form.items()
            if not isinstance(text, str):
                raise _Unstorable
            if tag == "s":
                return exp.Literal(this=self._count(text), is_string=True)
            if tag in ("i", "q"):
                return exp.Identifier(this=self._count(text), quoted=tag == "q")
        name = form.get("")
        if not isinstance(name, str) or name not in _CLASSES:
            raise _Unstorable
        cls = _CLASSES[self._count(name)]
        args: dict[str, Any] = {}
        for key, value in form.items():
            if key == "":
                continue
            if key not in cls.arg_types:
                raise _Unstorable
            if cls is exp.Update and key == "expressions" and isinstance(value, list):
                args[key] = [self.node(v, depth + 1, assignment=True) for v in value]
            else:
                args[key] = self.arg(value, depth)
        return cls(**args)

    def arg(self, value: object, depth: int) -> Any:
        if isinstance(value, bool):
            return value
        if isinstance(value, list):
            return [self.node(v, depth + 1) for v in value]
        if isinstance(value, dict) and len(value) == 1:
            ((tag, text),) = value.items()
            if tag == "f" and isinstance(text, str):
                return self._count(text)
            if tag == "d" and isinstance(text, str):
                return exp.DataType.Type[text]
        return self.node(value, depth + 1)


__all__ = ["MAX_FORM_CHARS", "MAX_NODES", "decode_tree", "encode_tree"]
