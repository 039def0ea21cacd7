"""Whether a generator's samples vary with its code, measured on its output alone.

A class's spread is the standard deviation across samples of that class, averaged over pixels (images in
[0, 1]). It is a function of the released generator only, so it costs no ε and may be printed anywhere. The
shipped image models spread 0.05-0.48 per class (MNIST's thin "1" the lowest, colour photographs about 0.2);
a generator that maps every code of a class to one image (DP-MERF on 120 images per class at ε = 1, issue 65)
spreads about 0. Below ``COLLAPSED_BELOW`` for its kind of image a class is called collapsed.

The bar is higher for colour: a collapsed colour fit draws one noise texture per class whose small jitter still
spreads 0.05 (DP-MEPF on 100 CIFAR-10 validation images per class at ε = 1, the ladder's tuning pool), while every
shipped colour model's classes spread 0.14 or more; grey models spread 0.05 and up (MNIST's aligned digits), and the
collapsed grey ones 0.02 or less (``python experiments/spread/shipped_spreads.py`` prints each model's lowest).
"""

from __future__ import annotations

from dataclasses import dataclass

from zoo.methods.contract import DPGenerativeModel

#: a class whose spread is below this, by the images' channels, draws nearly the same image for every code
COLLAPSED_BELOW = {1: 0.02, 3: 0.08}
#: samples drawn per class to measure its spread
SAMPLES_PER_CLASS = 32
#: the per-class spreads of the shipped image models, for a reader's scale
SHIPPED_SPREADS = "shipped models: colour 0.14 and up, grey 0.05 and up"


@dataclass(frozen=True)
class Spread:
    """Each class's spread (``"all"`` for an unconditional model)."""

    per_class: dict[str, float]
    #: the spread below which a class is collapsed (``COLLAPSED_BELOW`` for the images' channels)
    collapsed_below: float

    @property
    def collapsed(self) -> list[str]:
        return [name for name, spread in self.per_class.items() if spread < self.collapsed_below]

    def sentence(self, from_base: bool = False) -> str:
        """What the spread says, for the verdict (``from_base``: the fit started from a public base already, which
        is then no remedy)."""
        lowest = min(self.per_class.values())
        if not self.collapsed:
            return f"samples vary within each class (spread {lowest:.2f} at the lowest; {SHIPPED_SPREADS})"
        named = ", ".join(f"{name} {self.per_class[name]:.3f}" for name in self.collapsed)
        return (
            f"collapsed: every code draws nearly the same image in {len(self.collapsed)} of {len(self.per_class)} "
            f"classes ({named}; {SHIPPED_SPREADS}): the generator ignores its code, so more samples "
            f"add nothing; {'' if from_base else 'start from a public base (--init-from), '}raise ε or add images per "
            "class"
        )


def sample_spread(model: DPGenerativeModel, class_names: list[str], per_class: int = SAMPLES_PER_CLASS) -> Spread:
    """The spread of ``per_class`` fresh samples of each class of ``model`` (of all samples when unconditional)."""
    conditional = model.num_classes is not None
    names = class_names if conditional else ["all"]
    spreads = {}
    for label, name in enumerate(names):
        labels = [label] * per_class if conditional else None
        samples = model.sample(per_class, labels=labels, progress=False)
        spreads[name] = float(samples.flatten(1).std(dim=0).mean())
    return Spread(spreads, COLLAPSED_BELOW[1 if int(model.hparams["image_shape"][0]) == 1 else 3])
