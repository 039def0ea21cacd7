"""The methods, one file each. Importing this package imports every module in it, so each
``@register_method`` class registers itself with ``zoo.methods`` and is exported here by its
class name (``lightning_modules.DPLFlow`` in recipes): a new method file needs no edit elsewhere."""

import importlib
import pkgutil

from zoo.methods import DPGenerativeModel, registered_methods

#: old homes of modules that moved to ``lightning_modules.parts``: aliases that warn, not method files
MOVED = frozenset({"postprocess"})

for _module in pkgutil.iter_modules(__path__):
    if not _module.ispkg and _module.name not in MOVED:
        importlib.import_module(f"{__name__}.{_module.name}")

globals().update({cls.__name__: cls for cls in registered_methods().values()})
__all__ = ["DPGenerativeModel", *sorted(cls.__name__ for cls in registered_methods().values())]
