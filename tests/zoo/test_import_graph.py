"""The import graph of ``zoo/`` and ``lightning_modules/``: no module imports itself through others (no cycle,
lazy imports inside functions and ``TYPE_CHECKING`` imports included), and every import goes down the layers
below, never up or sideways. The graph is printed (``pytest -s`` or ``python -m tests.zoo.test_import_graph``).

The layers say who may know whom: the privacy core knows no dataset, the contract (``zoo.methods``) no
method, the release and evaluation no method file, and nothing in ``zoo/`` imports a method: methods register
themselves (``zoo.methods.register_method``) and are found by name."""

from __future__ import annotations

import ast
from collections import defaultdict
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("zoo", "lightning_modules")
#: bottom first; a unit is a module of zoo/ or a subpackage (its modules import each other freely, acyclically);
#: "zoo" is the package's own __init__ (the public API, imported lazily), "lightning_modules" the method files
LAYERS = (
    ("zoo.errors", "zoo.lazy"),
    ("zoo.headline", "zoo.plots", "zoo.local_state", "zoo.run_plan", "zoo.release_shapes"),
    ("zoo.privacy",),
    ("zoo.data", "zoo.baselines", "lightning_modules.nets"),
    ("zoo.stages",),
    ("zoo.methods", "zoo.recipes"),
    ("zoo.release", "zoo.training", "zoo.shapes", "zoo.recipe_cli", "lightning_modules.parts"),
    ("zoo.request_options", "zoo.public_bases"),
    ("zoo.command_requests",),
    ("zoo.evaluate_request",),
    ("zoo.metrics", "zoo.auditing", "zoo.base_weights", "zoo.estimate", "zoo.front_checks", "zoo.forecast"),
    ("zoo.finetuning", "zoo.fit", "zoo.train_request", "zoo.audit_command"),
    ("zoo.folder_training",),
    ("zoo.cli", "zoo"),
    ("zoo.option_tables",),
    ("lightning_modules",),
)


def module_files() -> dict[str, Path]:
    modules = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            modules[name.removesuffix(".__init__")] = path
    return modules


def module_graph() -> dict[str, set[str]]:
    """Each module's imports of other modules of the two packages (a name imported from a package that is
    itself a module counts as that module)."""
    modules = module_files()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text())):
            for target in _imported(node, name, is_package):
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name and not name.startswith(target + "."):
                    graph[name].add(target)
    return graph


def _imported(node: ast.AST, module: str, is_package: bool) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    base = node.module or ""
    if node.level:
        parts = module.split(".")[: len(module.split(".")) - node.level + is_package]
        base = ".".join([*parts, *([node.module] if node.module else [])])
    return [base, *(f"{base}.{alias.name}" for alias in node.names)]


def unit_of(module: str) -> str:
    units = sorted((unit for layer in LAYERS for unit in layer), key=len, reverse=True)
    found = [unit for unit in units if module == unit or (unit != "zoo" and module.startswith(unit + "."))]
    assert found, f"place {module} in LAYERS"
    return found[0]


def layer_of(unit: str) -> int:
    return next(index for index, layer in enumerate(LAYERS) if unit in layer)


def unit_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    units: dict[str, set[str]] = defaultdict(set)
    for module, targets in graph.items():
        units[unit_of(module)] |= {unit_of(t) for t in targets} - {unit_of(module)}
    return units


def describe(graph: dict[str, set[str]]) -> str:
    units = unit_graph(graph)
    lines = [
        f"{len(graph)} modules, {sum(map(len, graph.values()))} module imports; "
        f"{len(units)} units in {len(LAYERS)} layers, {sum(map(len, units.values()))} unit imports"
    ]
    for index, layer in reversed(list(enumerate(LAYERS))):
        for unit in layer:
            lines.append(f"  L{index} {unit} -> {', '.join(sorted(units.get(unit, ()))) or '-'}")
    return "\n".join(lines)


def test_the_import_graph_has_no_cycle():
    graph = module_graph()
    print(describe(graph))
    try:
        TopologicalSorter(graph).prepare()
    except CycleError as error:
        raise AssertionError(f"import cycle: {' -> '.join(error.args[1])}") from None


def test_every_module_belongs_to_a_layer():
    for module in module_graph():
        unit_of(module)


def test_every_import_goes_down_the_layers():
    graph = module_graph()
    wrong = [
        f"{module} ({unit_of(module)}, L{layer_of(unit_of(module))}) imports {target} "
        f"({unit_of(target)}, L{layer_of(unit_of(target))})"
        for module, targets in sorted(graph.items())
        for target in sorted(targets)
        if unit_of(target) != unit_of(module) and layer_of(unit_of(target)) >= layer_of(unit_of(module))
    ]
    assert not wrong, "imports that do not go down:\n" + "\n".join(wrong)


if __name__ == "__main__":
    print(describe(module_graph()))
