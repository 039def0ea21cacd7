"""The lowest per-class spread (``zoo.metrics.sample_spread``) of each conditional model folder given, or of every
shipped one: the evidence for ``COLLAPSED_BELOW``'s two bars. Each spread is measured on 32 fresh samples of the
generator alone, so it costs no ε.

    python experiments/spread/shipped_spreads.py [MODEL_FOLDER ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

from zoo.metrics.sample_spread import sample_spread
from zoo.release.hub import from_pretrained


def main(folders: list[Path]) -> None:
    for folder in folders:
        model = from_pretrained(folder)
        if model.num_classes is None or len(model.hparams.get("image_shape", ())) != 3:
            continue
        spread = sample_spread(model, [str(label) for label in range(model.num_classes)])
        lowest = min(spread.per_class.values())
        channels = "colour" if model.hparams["image_shape"][0] == 3 else "grey"
        verdict = "collapsed" if spread.collapsed else "varies"
        print(f"{folder.name:<64} {channels:<6} lowest spread {lowest:.3f}  {verdict}")


if __name__ == "__main__":
    given = [Path(arg) for arg in sys.argv[1:]]
    main(given or sorted(p for p in Path("checkpoints").iterdir() if (p / "config.json").exists()))
