"""Moved to ``lightning_modules.parts.postprocess``: this alias warns and will be removed in dpzoo 0.3."""

import warnings

from lightning_modules.parts.postprocess import *  # noqa: F403
from lightning_modules.parts.postprocess import SmoothSharpen  # noqa: F401  (the name the README gave)

warnings.warn(
    "lightning_modules.postprocess moved to lightning_modules.parts.postprocess; import SmoothSharpen from there",
    FutureWarning,
    stacklevel=2,
)
