"""House rules of the package, held by the suite (issue 19 part 5; import cycles and layers are
lint-imports' job, scripts/lint.sh): no module over 500 lines, and no private name used across
modules: ``from geoprobe.x import _y``, ``x._y`` on an imported geoprobe module, or a private module
(``geoprobe.pkg._mod``) imported from outside its package. The notebooks use only public names."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "geoprobe"
MAX_LINES = 500


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def resolve(importer: str, is_package: bool, module: str | None, level: int) -> str:
    """The absolute name ``from <level dots><module> import ...`` refers to inside ``importer``."""
    if not level:
        return module or ""
    base = importer.split(".") if is_package else importer.split(".")[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def private_module_outside(target: str, importer: str) -> str | None:
    """The first private component of module ``target`` whose package ``importer`` is not inside."""
    parts = target.split(".")
    for i, part in enumerate(parts):
        if is_private(part):
            package = ".".join(parts[:i])
            if not (importer == package or importer.startswith(package + ".")):
                return ".".join(parts[: i + 1])
    return None


def private_uses(source: str, importer: str, is_package: bool = False) -> list[str]:
    """Every use of another geoprobe module's private name in ``source`` (code of module ``importer``)."""
    found: list[str] = []
    aliases: dict[str, str] = {}  # local name -> geoprobe module it is bound to
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] != "geoprobe":
                    continue
                if (bad := private_module_outside(a.name, importer)) is not None:
                    found.append(f"import {a.name} (private module {bad})")
                if a.asname:
                    aliases[a.asname] = a.name
        elif isinstance(node, ast.ImportFrom):
            base = resolve(importer, is_package, node.module, node.level)
            if base.split(".")[0] != "geoprobe" or base == importer:
                continue
            if (bad := private_module_outside(base, importer)) is not None:
                found.append(f"from {base} import ... (private module {bad})")
            for a in node.names:
                full = f"{base}.{a.name}"
                if full in MODULES:  # a module: its private attributes are checked below
                    if (bad := private_module_outside(full, importer)) is not None:
                        found.append(f"from {base} import {a.name} (private module {bad})")
                    aliases[a.asname or a.name] = full
                elif is_private(a.name):
                    found.append(f"from {base} import {a.name}")
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
            and is_private(node.attr)
            and aliases[node.value.id] != importer
        ):
            found.append(f"{aliases[node.value.id]}.{node.attr}")
    return found


def test_no_module_is_over_500_lines():
    long = {m: n for m, p in MODULES.items() if (n := p.read_text(encoding="utf-8").count("\n")) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines (split them by job): {long}"


def test_no_private_name_is_used_across_modules():
    bad = {
        m: uses
        for m, p in MODULES.items()
        if (uses := private_uses(p.read_text(encoding="utf-8"), m, p.name == "__init__.py"))
    }
    assert not bad, f"private names used across modules (make them public or move them): {bad}"


def test_notebooks_use_public_names_only():
    bad = {}
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
        code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        code = "\n".join(line for line in code.splitlines() if not line.lstrip().startswith(("%", "!")))
        if uses := private_uses(code, "notebook"):
            bad[nb.name] = uses
    assert not bad, f"notebooks import private names: {bad}"


@pytest.mark.parametrize(
    ("source", "importer", "expected"),
    [
        (
            "from geoprobe.scan.result import _json_safe",
            "geoprobe.sula.result",
            ["from geoprobe.scan.result import _json_safe"],
        ),
        ("from geoprobe.scan.result import ScanResult", "geoprobe.sula.result", []),
        ("from geoprobe.intervene._forward import f", "geoprobe.intervene.ops", []),  # its own package
        (
            "from geoprobe.intervene._forward import f",
            "notebook",
            ["from geoprobe.intervene._forward import ... (private module geoprobe.intervene._forward)"],
        ),
        (
            "from geoprobe.models import loading\nloading._quiet()",
            "geoprobe.windtunnel.train",
            ["geoprobe.models.loading._quiet"],
        ),
        (
            "import geoprobe.models.loading as L\nL._quiet()",
            "geoprobe.windtunnel.train",
            ["geoprobe.models.loading._quiet"],
        ),
        ("from . import _x", "geoprobe.scan.run", ["from geoprobe.scan import _x"]),
        ("from geoprobe.x import __version__", "geoprobe.y", []),
    ],
)
def test_the_private_name_check_itself(source, importer, expected):
    assert private_uses(source, importer) == expected
