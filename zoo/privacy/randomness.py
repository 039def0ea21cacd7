"""Where the randomness of private mechanisms comes from: DP noise and Poisson subsampling."""

from __future__ import annotations

import secrets

import torch


def private_generator(seed: int | None = None) -> torch.Generator:
    """A CPU generator for DP noise or subsampling: seeded only when asked (tests), else from OS entropy.

    Keeping this off the global RNG means ``seed_everything`` never makes it repeatable
    across runs. (torch's generator is not a cryptographic RNG; Opacus' secure mode is the
    stronger option where an attacker could predict it.)
    """
    return torch.Generator().manual_seed(secrets.randbits(63) if seed is None else seed)
