"""The package's structure: layers import each other only through public names, and module-level
imports form no cycle (a cycle makes import order matter and hides which layer depends on which)."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "lakectl"


@functools.cache
def _modules() -> dict[str, ast.Module]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = ast.parse(path.read_text(), str(path))
    return out


def _imports(tree: ast.Module, *, top_level_only: bool) -> list[ast.ImportFrom | ast.Import]:
    if not top_level_only:
        return [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]
    return [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]


def _target(node: ast.ImportFrom | ast.Import) -> list[str]:
    if isinstance(node, ast.ImportFrom):
        return [node.module or ""]
    return [a.name for a in node.names]


def test_no_private_name_is_imported_from_another_module() -> None:
    found = []
    for name, tree in _modules().items():
        for node in _imports(tree, top_level_only=False):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("lakectl"):
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        found.append(f"{name} imports {node.module}.{alias.name}")
    assert not found, "\n".join(found)


def test_module_level_imports_form_no_cycle() -> None:
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, tree in modules.items():
        edges = set()
        for node in _imports(tree, top_level_only=True):
            for target in _target(node):
                if target.startswith("lakectl") and target != name:
                    # `from lakectl.cli import output` names a module too
                    names = [a.name for a in getattr(node, "names", [])]
                    subs = [f"{target}.{n}" for n in names if f"{target}.{n}" in modules]
                    edges.update(subs or [target])
        graph[name] = {e for e in edges if e in modules}
    cycles = _cycles(graph)
    assert not cycles, "\n".join(cycles)


def test_only_the_spark_layer_imports_pyspark_at_module_level() -> None:
    found = []
    for name, tree in _modules().items():
        if name.startswith("lakectl.spark"):
            continue
        for node in _imports(tree, top_level_only=True):
            if any(t.split(".")[0] == "pyspark" for t in _target(node)):
                found.append(name)
    assert not found, found


# What the CLI may take from the operations layer at run time: every command that reads or
# changes a table goes through lakectl.api.Table (type-only imports are not counted).
CLI_MAY_USE = {
    "lakectl.ops.create": {"create_table", "split_columns"},  # `create` (no table yet)
    "lakectl.ops.server": {"start_server", "stop_server", "server_status"},  # not a table
    "lakectl.ops.context": {"Context"},
}


def test_commands_reach_tables_only_through_the_library_api() -> None:
    found = []
    for name, tree in _modules().items():
        if not name.startswith("lakectl.cli"):
            continue
        type_only = {
            id(n)
            for block in ast.walk(tree)
            if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
            for n in ast.walk(block)
        }
        for node in _imports(tree, top_level_only=False):
            if id(node) in type_only or not isinstance(node, ast.ImportFrom):
                continue
            module = node.module or ""
            if module.startswith("lakectl.ops"):
                allowed = CLI_MAY_USE.get(module, set())
                found += [f"{name}: {module}.{a.name}" for a in node.names if a.name not in allowed]
    assert not found, "\n".join(found)


def test_only_the_expression_layer_parses_user_sql() -> None:
    """sqlglot's parser is imported by lakectl/expr/parse.py alone, and no module hands text to
    Spark's parser with F.expr or selectExpr."""
    import re

    root = Path(__file__).resolve().parent.parent / "lakectl"
    parser = re.compile(r"sqlglot\.parse|parse_one|from sqlglot import .*\bparse\b|\.tokenize\(")
    for path in sorted(root.rglob("*.py")):
        text = path.read_text()
        relative = path.relative_to(root).as_posix()
        if relative != "expr/parse.py":
            assert not parser.search(text), f"{relative} parses SQL itself"
        assert "F.expr(" not in text, relative
        assert "selectExpr(" not in text, relative


def _package_of(module: str) -> str:
    """``lakectl.ops.snapshot`` -> ``ops``; a top-level module (``lakectl.errors``) is its own."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def _package_imports() -> dict[tuple[str, str], list[str]]:
    """(importing package, imported package) -> where (module:line), from every import
    statement: at module level, inside functions and under ``TYPE_CHECKING``."""
    modules = _modules()
    edges: dict[tuple[str, str], list[str]] = {}
    for name, tree in modules.items():
        source = _package_of(name)
        for node in _imports(tree, top_level_only=False):
            targets = _target(node)
            if isinstance(node, ast.ImportFrom) and node.module == "lakectl":
                targets = [f"lakectl.{a.name}" for a in node.names]  # from lakectl import ops
            for target in targets:
                if not target.startswith("lakectl."):
                    continue
                imported = _package_of(target)
                if imported != source:
                    edges.setdefault((source, imported), []).append(f"{name}:{node.lineno}")
    return edges


# Package imports that still point against the layering (table < expr < updates < arrow <
# spark): each closes a cycle between packages. Listed so that no new one appears and each is
# removed from here when its import is moved; the test fails when one listed is gone.
KNOWN_BACK_EDGES: set[tuple[str, str]] = set()


def _cycles(graph: dict[str, set[str]]) -> list[str]:
    """Each cycle found by a depth-first walk of ``graph``, as ``a -> b -> a``."""
    cycles: list[str] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append(" -> ".join([*stack[stack.index(nxt) :], nxt]))
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return cycles


def test_packages_form_no_import_cycle_counting_imports_inside_functions() -> None:
    edges = _package_imports()
    assert set(edges) >= KNOWN_BACK_EDGES, sorted(KNOWN_BACK_EDGES - set(edges))
    graph: dict[str, set[str]] = {}
    for source, imported in edges:
        if (source, imported) not in KNOWN_BACK_EDGES:
            graph.setdefault(source, set()).add(imported)
    cycles = _cycles(graph)
    where = [
        f"{a} -> {b}: {', '.join(edges[(a, b)][:3])}"
        for cycle in cycles
        for a, b in zip(cycle.split(" -> "), cycle.split(" -> ")[1:], strict=False)
    ]
    assert not cycles, "\n".join([*cycles, *where])


def test_engines_and_the_scan_never_import_commands() -> None:
    """arrow/ and spark/ are back ends that read a scan (lakectl.scan); they, and the scan
    package, never import the command modules (lakectl.ops), the CLI or the library API; the
    scan package imports no back end."""
    edges = _package_imports()
    found = [
        f"{source} imports {imported}: {', '.join(edges[(source, imported)])}"
        for source, imported in sorted(edges)
        if (source in ("arrow", "spark", "scan") and imported in ("ops", "cli", "api"))
        or (source == "scan" and imported in ("arrow", "spark"))
    ]
    assert not found, "\n".join(found)


def test_the_scan_package_imports_no_engine_at_module_level() -> None:
    found = []
    for name, tree in _modules().items():
        if not name.startswith("lakectl.scan"):
            continue
        for node in _imports(tree, top_level_only=True):
            if any(t.split(".")[0] in ("pyspark", "pyarrow") for t in _target(node)):
                found.append(name)
    assert not found, found


# The live-row rule and the schema mapping are written once in Python, in lakectl/kernel/; every
# Spark job that reads stored rows without lakectl's data source runs it in its tasks
# (lakectl/spark/kernel_read.py). The data source (jvm/) is the one other implementation.

# Modules that name the delete operation code without deciding which rows are live.
WRITES_OPERATIONS = {
    "lakectl.table.layout",
    "lakectl.spark.acid_write",
    "lakectl.arrow.acid_writer",
    "lakectl.table.orc_files",
}


def _outside_kernel() -> dict[str, ast.Module]:
    return {n: t for n, t in _modules().items() if not n.startswith("lakectl.kernel")}


def test_only_the_kernel_tells_delete_events_from_inserts() -> None:
    """No module outside lakectl/kernel/ (nor the writers of events) tests an event's
    operation code: neither names OP_DELETE nor compares an ``operation`` column."""
    import re

    found = []
    for name, tree in _outside_kernel().items():
        if name in WRITES_OPERATIONS:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Name | ast.alias) and "OP_DELETE" in (
                getattr(node, "id", None),
                getattr(node, "name", None),
            ):
                found.append(f"{name} names OP_DELETE")
            compares = isinstance(node, ast.Call) and getattr(node.func, "attr", "") in (
                "equal",
                "not_equal",
            )
            if compares and re.search("[\"']operation[\"']", ast.unparse(node)):
                found.append(f"{name} compares the operation column")
    assert not found, "\n".join(sorted(set(found)))


def test_only_the_kernel_builds_a_delete_set() -> None:
    """No module outside lakectl/kernel/ matches delete events against rows itself (a set, a
    sorted index or an anti join of the identity (originalTransaction, bucket, rowId), as the
    copies did); they use the kernel's ``DeleteSet``."""
    found = []
    for name, tree in _outside_kernel().items():
        for node in ast.walk(tree):
            text = ast.unparse(node) if isinstance(node, ast.Call) else ""
            if text.startswith(("set(zip(", "np.lexsort(", "np.searchsorted(")):
                found.append(f"{name} indexes identities (line {node.lineno}: {text[:40]})")
            if text.startswith("pc.is_in(") and "rowId" in text:
                found.append(f"{name} looks rowIds up (line {node.lineno})")
            anti = isinstance(node, ast.keyword) and node.arg == "join_type"
            if anti and "anti" in ast.unparse(node.value):  # type: ignore[union-attr]
                found.append(f"{name} anti-joins rows (line {node.value.lineno})")
            if isinstance(node, ast.ClassDef) and "delete" in node.name.lower():
                found.append(f"{name} defines {node.name}")
    assert not found, "\n".join(found)


def test_only_the_kernel_maps_older_files_to_todays_schema() -> None:
    """No module outside lakectl/kernel/ matches a file's
    fields to today's columns by position, as the copies did: a column's position tested
    against the number of a file's fields (``position < len(children)``)."""
    import re

    found = []
    for name, tree in _outside_kernel().items():
        for node in ast.walk(tree):
            if not isinstance(node, ast.Compare) or len(node.comparators) != 1:
                continue
            left, right = node.left, node.comparators[0]
            if isinstance(right, ast.Name):
                left, right = right, left
            if not (isinstance(left, ast.Name) and left.id in ("i", "index", "position")):
                continue
            if not (isinstance(right, ast.Call) and getattr(right.func, "id", "") == "len"):
                continue
            if re.search(r"children|names|columns|fields", ast.unparse(right)):
                found.append(f"{name} (line {node.lineno}): {ast.unparse(node)}")
    assert not found, "\n".join(found)
