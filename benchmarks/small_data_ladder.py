"""The small-data ladder (issue 65): what `dpzoo train` gives a user who holds a few hundred images per class.

The private pools are drawn from CIFAR-10's 10,000 held-out validation images (the seed-0 split every CIFAR-10
recipe's settings were chosen on; no shipped model protects them, and no public base saw them), classes 5-9 (dog,
frog, horse, ship, truck): the n images of each class whose file names hash lowest, so the pools are nested (25 ⊂
50 ⊂ 100 ⊂ 300) and one image's presence never moves another's. Each pool's ``test/`` is the official test split of
those classes (5,000 images), which every cell is scored on. The grey ladder draws Fashion-MNIST's validation images
of classes 5-9 (sandal, shirt, sneaker, bag, ankle boot) the same way, written as PNG files.

A cell is one `dpzoo train` run, timed, then one `dpzoo evaluate` of Inception FID (2,000 samples against the test
images), the 5-class CNN CAS (one run) and the closeness verdict; its row is appended to ``runs/ladder/rows.jsonl``
with the two commands. ``--release-size full`` gives the baseline rows (the shape the recipes had before the
release was sized to the data) and ``--no-base`` a run from scratch; ``--max-steps 3000`` the recipe's full length.

    python benchmarks/small_data_ladder.py pools                       # data/ladder/{cifar10,fashion}-n{25,...}
    python benchmarks/small_data_ladder.py cell --pool cifar10-n100 --epsilon 10 [-- DPZOO TRAIN OPTIONS]
    python benchmarks/small_data_ladder.py table                       # the markdown table of every row
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shlex
import subprocess
import sys
import time
from pathlib import Path

from zoo.data.datamodule import DEFAULT_SPLIT_SEED, DEFAULT_VALIDATION_SIZE
from zoo.data.folders import folder_parts
from zoo.data.partition import train_validation_split
from zoo.data.settings import DATA_DIR_ENV, source_data_dir
from zoo.data.sources import named_or_refused

SIZES = (25, 50, 100, 300)
LABELS = range(5, 10)
LADDER = Path("data/ladder")
ROWS = Path("runs/ladder/rows.jsonl")
METRICS = "fid,cas_cnn,closeness"
SAMPLES = 2000


def ranked(names: list[str]) -> list[str]:
    """Names by a public hash of each name alone: the first n of a class form its pool of n."""
    return sorted(names, key=lambda name: hashlib.sha256(f"ladder:{name}".encode()).hexdigest())


def cifar10_pools(source: Path) -> None:
    tree = (source / named_or_refused("cifar10").settings["tree"]).resolve()
    train = folder_parts(tree)[0]
    _, validation = train_validation_split(len(train.files), DEFAULT_VALIDATION_SIZE, DEFAULT_SPLIT_SEED)
    classes = [named_or_refused("cifar10").classes[label] for label in LABELS]
    by_class = {name: [] for name in classes}
    for index in validation.tolist():
        file = train.files[index]
        if file.parent.name in by_class:
            by_class[file.parent.name].append(file)
    for size in SIZES:
        out = LADDER / f"cifar10-n{size}"
        for name, files in by_class.items():
            chosen = {f.name for f in files}
            for file_name in ranked(sorted(chosen))[:size]:
                link = out / "train" / name / file_name
                link.parent.mkdir(parents=True, exist_ok=True)
                link.symlink_to(tree / "train" / name / file_name)
            (out / "test").mkdir(parents=True, exist_ok=True)
            (out / "test" / name).symlink_to(tree / "test" / name, target_is_directory=True)
        print(f"wrote {out}: {size} validation images per class of {', '.join(classes)}")


def fashion_pools() -> None:
    from PIL import Image

    from zoo.data import load_images

    names = ("sandal", "shirt", "sneaker", "bag", "ankle-boot")
    x, y = load_images("fashion_mnist", train=True)
    _, validation = train_validation_split(len(y), DEFAULT_VALIDATION_SIZE, DEFAULT_SPLIT_SEED)
    test_x, test_y = load_images("fashion_mnist", train=False)

    def write(folder: Path, images, labels, indices: list[int]) -> None:
        for index in indices:
            name = names[int(labels[index]) - LABELS[0]]
            path = folder / name / f"{index:05d}.png"
            path.parent.mkdir(parents=True, exist_ok=True)
            Image.fromarray((images[index, 0] * 255).round().byte().numpy(), mode="L").save(path)

    test = [i for i in range(len(test_y)) if int(test_y[i]) in LABELS]
    pools = {label: [f"{i:05d}" for i in validation.tolist() if int(y[i]) == label] for label in LABELS}
    for size in SIZES:
        out = LADDER / f"fashion-n{size}"
        chosen = [int(name) for label in LABELS for name in ranked(pools[label])[:size]]
        write(out / "train", x, y, chosen)
        write(out / "test", test_x, test_y, test)
        print(f"wrote {out}: {size} validation images per class of {', '.join(names)}")


def run_cell(pool: str, epsilon: float, extra: list[str], tag: str | None) -> None:
    words = [pool, f"eps{epsilon:g}", *(w.strip("-").replace("/", "_") for w in extra), *([tag] if tag else [])]
    name = "-".join(words)
    if Path("runs/ladder", name).exists():
        sys.exit(f"runs/ladder/{name} exists: move it away to measure the cell again")
    out = Path("runs/ladder") / name
    train = ["dpzoo", "train", str(LADDER / pool), "--method", "dp-mepf", "--epsilon", f"{epsilon:g}"]
    train += ["--out", str(out), "--overwrite", *extra]
    started = time.monotonic()
    log = out.with_suffix(".log")
    out.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as stream:
        subprocess.run(train, check=True, stdout=stream, stderr=subprocess.STDOUT)
    minutes = (time.monotonic() - started) / 60
    scores = out.with_suffix(".json")
    evaluate = ["dpzoo", "evaluate", str(out), "--dataset", str(LADDER / pool), "--metrics", METRICS]
    evaluate += ["--num-samples", str(SAMPLES), "--runs", "1", "--json", str(scores), "--overwrite"]
    subprocess.run(evaluate, check=True, stdout=subprocess.DEVNULL)
    config = json.loads((out / "config.json").read_text())
    row = {
        "cell": name,
        "pool": pool,
        "epsilon": epsilon,
        "options": " ".join(extra),
        "base": _base(log),
        "release": _release(config),
        "steps": _line(log, "the fit's objective stopped moving") or _line(log, "trained"),
        "minutes": round(minutes, 1),
        "scores": json.loads(scores.read_text()),
        "train": shlex.join(train),
        "evaluate": shlex.join(evaluate),
    }
    with ROWS.open("a") as rows:
        rows.write(json.dumps(row) + "\n")
    print(json.dumps(row))


def _release(config: dict) -> str:
    """The release's shape by name, and its input size."""
    from zoo.release_shapes import shape_of

    arch = config["architecture"]
    shape = shape_of("dp-mepf", arch["image_shape"][0], arch)
    return f"{shape.name if shape else 'own'} at {arch['input_size']}×{arch['input_size']}"


def _base(log: Path) -> str | None:
    """The base the run started from (given by --init-from, or chosen by dpzoo train), or ``proposed`` where dpzoo
    train only proposed one; None for none."""
    started = _line(log, "Started from ").split(",")[0].removeprefix("Started from ")
    return started or _line(log, "base: ").split(",")[0].removeprefix("base: ") or None


def _line(log: Path, words: str) -> str:
    """The last line of the training log that holds ``words`` (progress bars' carriage returns split lines)."""
    lines = [line for line in log.read_text().replace("\r", "\n").splitlines() if words in line]
    return lines[-1].strip() if lines else ""


def table() -> None:
    print("| pool | ε | options | release | base | minutes | FID | CNN CAS | closeness |")
    print("|---|---|---|---|---|---|---|---|---|")
    for line in ROWS.read_text().splitlines():
        row = json.loads(line)
        scores = {name: result["value"] for name, result in row["scores"]["results"].items()}
        print(
            f"| {row['pool']} | {row['epsilon']:g} | {row['options'] or '(default)'} | {row['release']} | "
            f"{row.get('base') or 'none'} | "
            f"{row['minutes']} | {scores.get('fid', float('nan')):.1f} | {scores.get('cas_cnn', float('nan')):.1f} | "
            f"{scores.get('closeness', float('nan')):.2f} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("pools", help="write the ladder's pools under data/ladder")
    cell = commands.add_parser("cell", help="train and evaluate one cell")
    cell.add_argument("--pool", required=True)
    cell.add_argument("--epsilon", type=float, required=True)
    cell.add_argument("--tag", default=None, help="a word for the cell's name, to tell two runs of one cell apart")
    commands.add_parser("table", help="print every measured row")
    args, extra = parser.parse_known_args()
    if args.command == "pools":
        source = source_data_dir()
        if source is None:
            sys.exit(f"set {DATA_DIR_ENV} to the folder holding {named_or_refused('cifar10').settings['tree']}/")
        cifar10_pools(source)
        fashion_pools()
    elif args.command == "cell":
        run_cell(args.pool, args.epsilon, [word for word in extra if word != "--"], args.tag)
    else:
        table()


if __name__ == "__main__":
    main()
