"""The methods, one file each; importing this package registers them with zoo.registry."""

from lightning_modules.base import DPGenerativeModel
from lightning_modules.dp_lflow import DPLFlow
from lightning_modules.dp_nf import DPNF
from lightning_modules.partitioned import PerClassModel

__all__ = ["DPNF", "DPGenerativeModel", "DPLFlow", "PerClassModel"]
