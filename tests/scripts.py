"""Scripts of the repository (benchmarks/, experiments/) loaded by path: they are not packages, and a site
package already owns the name ``benchmarks``."""

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def load_script(relative: str) -> ModuleType:
    """The module of the script at ``relative`` (to the repository root)."""
    path = ROOT / relative
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
