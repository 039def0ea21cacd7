"""Building blocks shared by the methods. No batch norm anywhere: per-example gradients."""

from lightning_modules.nets.autoencoder import ConvDecoder, ConvEncoder
from lightning_modules.nets.realnvp import AffineCoupling, RealNVP

__all__ = ["AffineCoupling", "ConvDecoder", "ConvEncoder", "RealNVP"]
