"""The method contract (``contract.py``) and the registry of methods by name (``registry.py``): what the
core knows of a method. The methods themselves live in ``lightning_modules/``, one file each."""

from zoo.methods.contract import (
    DATA_ARGUMENTS,
    DPGenerativeModel,
    TinyRecipe,
    as_data_argument,
    check_data_arguments,
    toy_images,
)
from zoo.methods.registry import docs_page, method_class, register_method, registered_methods

__all__ = [
    "DATA_ARGUMENTS",
    "DPGenerativeModel",
    "TinyRecipe",
    "as_data_argument",
    "check_data_arguments",
    "docs_page",
    "method_class",
    "register_method",
    "registered_methods",
    "toy_images",
]
