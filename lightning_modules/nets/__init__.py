"""Building blocks shared by the methods. No batch norm anywhere: per-example gradients."""

from lightning_modules.nets.autoencoder import ConvDecoder, ConvEncoder
from lightning_modules.nets.flow import NormalizingFlow
from lightning_modules.nets.maf import MAF
from lightning_modules.nets.realnvp import AffineCoupling, RealNVP

__all__ = ["MAF", "AffineCoupling", "ConvDecoder", "ConvEncoder", "NormalizingFlow", "RealNVP"]
