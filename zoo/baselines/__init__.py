"""Baselines that the zoo's methods are compared with (not shipped as checkpoints)."""

from zoo.baselines.dp_mog import DPGaussianMixture

__all__ = ["DPGaussianMixture"]
