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


class DeviceGenerators:
    """A mechanism's noise generator on each device it draws on, so that noise for a GPU's gradients is drawn
    there instead of on the CPU and copied synchronously every step.

    The CPU draws come from ``source`` itself; a device's generator is seeded once from ``source``, so a
    seeded source (tests) stays repeatable and an unseeded one stays unpredictable."""

    def __init__(self, source: torch.Generator) -> None:
        self.source = source
        self._by_device: dict[torch.device, torch.Generator] = {}

    def on(self, device: torch.device) -> torch.Generator:
        if device.type == "cpu":
            return self.source
        if device not in self._by_device:
            seed = int(torch.randint(0, 2**63 - 1, (1,), generator=self.source))
            self._by_device[device] = torch.Generator(device=device).manual_seed(seed)
        return self._by_device[device]
