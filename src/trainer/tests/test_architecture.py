"""The trainer's floors (src/trainer/README.md) import only downward, and no module imports itself through others.
Read from the source with `ast` — every import, those inside functions included — so the rule holds for the code as
written, not for what a test happened to run."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "coa_trainer"
# Bottom to top. A floor may import its own floor and those below it; the top (cli, integrations) may import anything.
FLOORS = ["contracts", "base", "env", "data", "model", "rollout", "algos", "evaluation", "stages", "pipeline"]
TOP = {"cli", "__main__", "integrations"}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> list[tuple[str, int]]:
    """(absolute module imported from coa_trainer, line) for every import statement of the file."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("coa_trainer"):
                continue
            if node.module is None or _is_package(target):  # `from . import quiet`: the names are modules
                out += [
                    (f"{target}.{a.name}" if _is_module(f"{target}.{a.name}") else target, node.lineno)
                    for a in node.names
                ]
            else:
                out.append((target, node.lineno))
        elif isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names if a.name.startswith("coa_trainer")]
    return out


def _is_module(dotted: str) -> bool:
    p = PACKAGE.parent.joinpath(*dotted.split("."))
    return p.with_suffix(".py").is_file() or (p / "__init__.py").is_file()


def _is_package(dotted: str) -> bool:
    return (PACKAGE.parent.joinpath(*dotted.split(".")) / "__init__.py").is_file()


def floor_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def rank(floor: str) -> int:
    return FLOORS.index(floor) if floor in FLOORS else len(FLOORS)


def modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def test_every_module_lives_on_a_floor():
    stray = [
        str(p.relative_to(PACKAGE))
        for p in modules()
        if floor_of(module_name(p)) not in FLOORS and floor_of(module_name(p)) not in TOP | {"__init__"}
    ]
    assert not stray, f"modules outside the floors {FLOORS} and the top {sorted(TOP)}: {stray}"


def test_floors_import_only_downward():
    upward = []
    for p in modules():
        here = floor_of(module_name(p))
        if here in TOP or here == "__init__":
            continue
        for target, line in imports(p):
            there = floor_of(target)
            if there in TOP or rank(there) > rank(here):
                upward.append(f"{p.relative_to(PACKAGE)}:{line}: {here} imports {target} ({there} is above it)")
    assert not upward, "\n".join(upward)


def test_no_import_circles():
    graph = {module_name(p): sorted({t for t, _ in imports(p) if t != module_name(p)}) for p in modules()}
    cycles: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for n in graph.get(m, []):
            if n not in graph:
                continue
            if state.get(n) == 1:
                cycles.append(stack[stack.index(n) :] + [n])
            elif n not in state:
                visit(n)
        stack.pop()
        state[m] = 2

    for m in graph:
        if m not in state:
            visit(m)
    assert not cycles, "import circles:\n" + "\n".join(" → ".join(c) for c in cycles)


def test_the_rule_catches_an_upward_import(tmp_path):
    """The checker itself: a data-floor module importing a stage is reported (so a green run means something)."""
    fake = PACKAGE / "data" / "_probe_upward.py"
    fake.write_text("from ..stages.train import run_stage\n", encoding="utf-8")
    try:
        found = [t for t, _ in imports(fake)]
        assert found == ["coa_trainer.stages.train"] and rank(floor_of(found[0])) > rank("data")
    finally:
        fake.unlink()


def test_the_readme_maps_every_module_of_every_floor():
    """src/trainer/README.md's floor table lists exactly the modules on disk (a new module is placed in the map)."""
    import re

    readme = (PACKAGE.parent / "README.md").read_text(encoding="utf-8")
    listed: dict[str, set[str]] = {}
    for line in readme.splitlines():
        m = re.match(r"\| `(\w+)/` \|.*\| (`\w+`(?:, `\w+`)*) \|$", line)
        if m:
            listed[m.group(1)] = set(re.findall(r"`(\w+)`", m.group(2)))
    on_disk = {floor: {p.stem for p in (PACKAGE / floor).glob("*.py") if p.stem != "__init__"} for floor in FLOORS}
    assert set(listed) == set(FLOORS), f"floors in the README table: {sorted(listed)}"
    for floor in FLOORS:
        assert listed[floor] == on_disk[floor], (floor, sorted(listed[floor] ^ on_disk[floor]))
