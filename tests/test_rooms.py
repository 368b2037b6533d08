"""The house's edges: no room imports another room's private module, and the rooms' imports form no cycle.

Every import in the package is read (module level and inside functions, where the rooms import each other lazily),
relative ones resolved, so that a change that crosses a room's wall fails here with the line that does it.
"""

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import iosets

PACKAGE = Path(iosets.__file__).parent
ROOMS = {"analyzer", "recommender", "replay", "datasets", "report", "api", "cli", "arbiter", "validate"}
"""The subpackages; the top-level modules (schemas, errors, workload, the private helpers) are the floor."""


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> list[tuple[int, str]]:
    """``(line, absolute module)`` of every import in ``path``, ``from x import y`` counted as ``x.y`` too."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    return _imports_of(path.read_text(encoding="utf-8"), package)


def _imports_of(source: str, package: str) -> list[tuple[int, str]]:
    """``_imports`` of ``source`` as a module of ``package``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")
            base = base[: len(base) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            found.append((node.lineno, module))
            found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
    return [(line, module) for line, module in found if module.startswith("iosets.")]


def _room(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in ROOMS else None


def _sources() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "hooks" not in p.parts)


def test_no_room_imports_another_rooms_private_module():
    crossings = []
    for path in _sources():
        home = _room(_module_name(path))
        for line, module in _imports(path):
            room = _room(module)
            private = any(part.startswith("_") for part in module.split(".")[2:])
            if room is not None and room != home and private:
                crossings.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports {module}")
    assert crossings == []


def test_the_rooms_import_each_other_without_a_cycle():
    graph: dict[str, set[str]] = {room: set() for room in ROOMS}
    for path in _sources():
        home = _room(_module_name(path))
        if home is None:
            continue
        graph[home] |= {room for _, module in _imports(path) if (room := _room(module)) not in (None, home)}
    try:
        order = list(TopologicalSorter(graph).static_order())
    except CycleError as cycle:
        raise AssertionError(f"rooms import each other in a cycle: {' -> '.join(cycle.args[1])}") from None
    assert order.index("analyzer") < order.index("replay") < order.index("report") < order.index("cli")
    assert graph["analyzer"] == set() and "replay" not in graph["recommender"]


def test_the_walk_sees_relative_and_function_level_imports():
    source = "import os\n\ndef f():\n    from ..replay._closed import x\n    from . import _build\n"
    assert _imports_of(source, "iosets.report") == [
        (4, "iosets.replay._closed"),
        (4, "iosets.replay._closed.x"),
        (5, "iosets.report"),
        (5, "iosets.report._build"),
    ]
    assert _module_name(PACKAGE / "report" / "__init__.py") == "iosets.report"
