"""dpzoo: differentially private generative models for PyTorch Lightning."""

__version__ = "0.1.0"
