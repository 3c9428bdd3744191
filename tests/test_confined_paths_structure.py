"""Every path built from a table's contents goes through the one confining function.

Names read from a table's files (log records' ``added``/``obsolete``/``partitions``, the
``info`` of a record, compaction ids and outputs, anything ``json.loads`` returned) are tainted
inside each function, and so is whatever is computed from them; a tainted value must not reach
a path builder (``store.path``, ``storage.join``, ``os.path.join``, a storage call that reads,
writes, lists or deletes, or an f-string / ``+`` with a ``/``) unless it passed through
:func:`lakectl.table.paths.table_path` (or :func:`~lakectl.table.paths.check_name`, or
:func:`lakectl.table.compaction_runs.status_file`, which calls it) first. Only the confining
module itself joins raw names.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "lakectl"
CONFINING_MODULE = PACKAGE / "table" / "paths.py"

# What a table's files hold: attributes and keys whose values are names read from them.
TAINTED_FIELDS = {"added", "obsolete", "partitions", "outputs", "inputs", "id", "run_id", "info"}
TAINTED_CALLS = {"loads"}  # json.loads: anything parsed from a file
# The confining functions, and (found below) every function that only returns what they return.
SANITIZERS = {"table_path", "check_name"}
# Calls that build a path from their arguments or hand one to storage.
PATH_BUILDERS = {"path", "join"}
STORAGE_CALLS = {
    "delete",
    "exists",
    "isdir",
    "makedirs",
    "read_bytes",
    "read_text",
    "read_tail",
    "write_bytes",
    "replace_tail",
    "put_if_absent",
    "list_entries",
    "list_names",
    "list_names_after",
    "du",
    "find",
    "open",
    "move",
    "rm",
    "remove",
    "unlink",
    "rmtree",
}


def _call_name(node: ast.Call) -> str:
    func = node.func
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


class _Function:
    """Taint analysis of one function body (a nested function is analysed with it and alone)."""

    def __init__(self, func: ast.AST, messages: set[int]) -> None:
        self.func = func
        self.messages = messages
        self.tainted: set[str] = set()
        self.nodes = list(ast.walk(func))

    def is_tainted(self, expr: ast.AST | None) -> bool:
        if expr is None:
            return False
        if isinstance(expr, ast.Call) and _call_name(expr) in SANITIZERS:
            return False
        if isinstance(expr, ast.Attribute) and expr.attr in TAINTED_FIELDS:
            return True
        if isinstance(expr, ast.Name):
            return expr.id in self.tainted
        if isinstance(expr, ast.Subscript):
            key = expr.slice
            if isinstance(key, ast.Constant) and key.value in TAINTED_FIELDS:
                return True
        if isinstance(expr, ast.Call):
            name = _call_name(expr)
            if name in TAINTED_CALLS:
                return True
            key = expr.args[0] if name == "get" and expr.args else None
            if isinstance(key, ast.Constant) and key.value in TAINTED_FIELDS:
                return True
        if isinstance(expr, ast.Lambda | ast.FunctionDef | ast.Compare):
            return False  # a function is not a value; a comparison is a bool
        if isinstance(expr, ast.IfExp):  # the condition picks a value, it is not one
            return self.is_tainted(expr.body) or self.is_tainted(expr.orelse)
        return any(self.is_tainted(child) for child in ast.iter_child_nodes(expr))

    def _targets(self, node: ast.AST) -> list[tuple[ast.AST, ast.AST | None]]:
        """(target, value) pairs that bind names."""
        if isinstance(node, ast.Assign):
            return [(t, node.value) for t in node.targets]
        if isinstance(node, ast.AnnAssign | ast.AugAssign | ast.NamedExpr):
            return [(node.target, node.value)]
        if isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
            return [(node.target, node.iter)]
        if isinstance(node, ast.withitem) and node.optional_vars is not None:
            return [(node.optional_vars, node.context_expr)]
        return []

    def propagate(self) -> None:
        changed = True
        while changed:
            changed = False
            for node in self.nodes:
                for target, value in self._targets(node):
                    if not self.is_tainted(value):
                        continue
                    for name in ast.walk(target):
                        if isinstance(name, ast.Name) and name.id not in self.tainted:
                            self.tainted.add(name.id)
                            changed = True

    def violations(self) -> list[ast.AST]:
        self.propagate()
        found: list[ast.AST] = []
        for node in self.nodes:
            if isinstance(node, ast.Call):
                name = _call_name(node)
                receiver = node.func.value if isinstance(node.func, ast.Attribute) else None
                if isinstance(receiver, ast.Constant):  # ", ".join(...)
                    continue
                if name in PATH_BUILDERS | STORAGE_CALLS:
                    args = [*node.args, *(k.value for k in node.keywords)]
                    if any(self.is_tainted(a) for a in args):
                        found.append(node)
            elif isinstance(node, ast.JoinedStr):
                slashed = any(
                    isinstance(v, ast.Constant) and "/" in str(v.value) for v in node.values
                )
                values = [v.value for v in node.values if isinstance(v, ast.FormattedValue)]
                in_message = id(node) in self.messages
                if slashed and any(self.is_tainted(v) for v in values) and not in_message:
                    found.append(node)
            elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
                sides = _operands(node)
                slashed = any(isinstance(s, ast.Constant) and "/" in str(s.value) for s in sides)
                if slashed and any(self.is_tainted(s) for s in sides):
                    found.append(node)
        return found


def _operands(node: ast.AST) -> list[ast.AST]:
    """The operands of a chain of ``+``: ``a + "/" + b`` -> [a, "/", b]."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return [*_operands(node.left), *_operands(node.right)]
    return [node]


def _messages(tree: ast.AST) -> set[int]:
    """The f-strings that are (part of) an argument of an error or a message: text, not
    paths (by ``id``, valid while ``tree`` lives)."""
    out: set[int] = set()
    for call in ast.walk(tree):
        if not isinstance(call, ast.Call):
            continue
        name = _call_name(call)
        if name.endswith(("Error", "error")) or name in {"note", "line", "progress", "event"}:
            for arg in [*call.args, *(k.value for k in call.keywords)]:
                out.update(id(n) for n in ast.walk(arg) if isinstance(n, ast.JoinedStr))
    return out


def _wrappers(trees: list[ast.AST]) -> set[str]:
    """Names of functions whose every ``return`` gives a confining function's result (such as
    ``status_file``), found until no more are."""
    known = set(SANITIZERS)
    while True:
        more = {
            f.name
            for tree in trees
            for f in ast.walk(tree)
            if isinstance(f, ast.FunctionDef)
            and f.name not in known
            and (returns := [r for r in ast.walk(f) if isinstance(r, ast.Return)])
            and all(isinstance(r.value, ast.Call) and _call_name(r.value) in known for r in returns)
        }
        if not more:
            return known
        known |= more


def unconfined_paths(source: str, filename: str = "<string>") -> list[str]:
    """``file:line: code`` of every path built from table contents without the confining
    function."""
    tree = ast.parse(source, filename)
    messages = _messages(tree)
    out = []
    for func in ast.walk(tree):
        if isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            for node in _Function(func, messages).violations():
                out.append(f"{filename}:{node.lineno}: {ast.unparse(node)[:120]}")
    return sorted(set(out))


def test_every_path_from_table_contents_goes_through_the_confining_function() -> None:
    files = sorted(p for p in PACKAGE.rglob("*.py") if p != CONFINING_MODULE)
    SANITIZERS.update(_wrappers([ast.parse(p.read_text()) for p in files]))
    assert {"status_file", "_dir_path"} <= SANITIZERS
    found = []
    for path in files:
        found += unconfined_paths(path.read_text(), str(path.relative_to(PACKAGE.parent)))
    assert not found, "build these paths with lakectl.table.paths.table_path:\n" + "\n".join(found)


BYPASSES = [
    # The clean bug: a status file's id straight into a path.
    "def f(store, run):\n    store.storage.delete(store.path(f'_lakectl/compactions/{run.id}.json'))",
    "def f(store, record):\n    for rel in record.obsolete:\n        store.storage.delete(store.path(rel))",
    "def f(storage, root, record):\n    dirs = {d for r in record for d in r.added}\n"
    "    for d in dirs:\n        storage.exists(storage.join(root, d))",
    "def f(store, item):\n    inputs = tuple(item.get('inputs', ()))\n"
    "    return [store.storage.exists(store.path(d)) for d in inputs]",
    "def f(root, raw):\n    data = json.loads(raw)\n    return root + '/' + data['name']",
    "def f(root, record):\n    return f'{root}/{record.info[\"x\"]}'",
    "def f(storage, status):\n    storage.write_bytes(posixpath.join('x', status.id), b'')",
]
CONFINED = [
    "def f(store, record):\n    for rel in record.obsolete:\n"
    "        store.storage.delete(table_path(store.storage, store.root, rel, S, source='x'))",
    "def f(store, run):\n    rel = check_name(run.id, S, source='x')\n"
    "    store.storage.delete(store.path(rel))",
    "def f(store, record):\n    raise FormatError(f'{store.root}/{record.added[0]} is bad')",
    "def f(record):\n    return ', '.join(record.added)",
]


def test_the_check_finds_a_bypass_and_accepts_the_confined_forms() -> None:
    for source in BYPASSES:
        assert unconfined_paths(source), source
    for source in CONFINED:
        assert not unconfined_paths(source), source
