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

    python benchmarks/small_data_ladder.py pools                       # data/ladder/{cifar10,fashion}-n{25,...}, tune-*
    python benchmarks/small_data_ladder.py cell --pool cifar10-n100 --epsilon 10 [-- DPZOO TRAIN OPTIONS]
    python benchmarks/small_data_ladder.py sigma0 --pool tune-cifar10-n50  # σ = 0 on a tuning pool: is noise the limit?
    python benchmarks/small_data_ladder.py compose --epsilons 10,10,1  # the cells sharing a record, composed
    python benchmarks/small_data_ladder.py table                       # the markdown table of every row
    python benchmarks/small_data_ladder.py forecasts                   # each row's forecast beside its closeness
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
#: the tuning pools: CIFAR-10 validation images of classes 0-4 (airplane, automobile, bird, cat, deer)
TUNING_SIZES = (50, 100)
TUNING_LABELS = range(0, 5)
LADDER = Path("data/ladder")
ROWS = Path("runs/ladder/rows.jsonl")
METRICS = "fid,cas_cnn,closeness"
SAMPLES = 2000


def ranked(names: list[str]) -> list[str]:
    """Names by a public hash of each name alone: the first n of a class form its pool of n."""
    return sorted(names, key=lambda name: hashlib.sha256(f"ladder:{name}".encode()).hexdigest())


def cifar10_pools(source: Path) -> None:
    """The ladder's pools of classes 5-9 (scored on their test split), and the tuning pools of classes 0-4 (``tune-``:
    the base's public folder holds their training split but none of these validation images; scored on the
    validation images of those classes outside every tuning pool), where settings are chosen."""
    tree = (source / named_or_refused("cifar10").settings["tree"]).resolve()
    train = folder_parts(tree)[0]
    _, validation = train_validation_split(len(train.files), DEFAULT_VALIDATION_SIZE, DEFAULT_SPLIT_SEED)
    names = named_or_refused("cifar10").classes
    by_class: dict[str, list[str]] = {name: [] for name in names}
    for index in validation.tolist():
        file = train.files[index]
        by_class[file.parent.name].append(file.name)
    rankings = {name: ranked(sorted(files)) for name, files in by_class.items()}
    for size in SIZES:
        out = LADDER / f"cifar10-n{size}"
        if out.exists():
            continue
        for label in LABELS:
            _link_pool(out, names[label], rankings[names[label]][:size], tree)
            (out / "test" / names[label]).symlink_to(tree / "test" / names[label], target_is_directory=True)
        print(f"wrote {out}: {size} validation images per class of {', '.join(names[label] for label in LABELS)}")
    for size in TUNING_SIZES:
        out = LADDER / f"tune-cifar10-n{size}"
        if out.exists():
            continue
        for label in TUNING_LABELS:
            ranking = rankings[names[label]]
            _link_pool(out, names[label], ranking[:size], tree)
            (out / "test" / names[label]).mkdir()
            for file_name in ranking[max(TUNING_SIZES) :]:
                (out / "test" / names[label] / file_name).symlink_to(tree / "train" / names[label] / file_name)
        tuned = ", ".join(names[label] for label in TUNING_LABELS)
        print(f"wrote {out}: {size} validation images per class of {tuned}, scored on the others")


def _link_pool(out: Path, name: str, file_names: list[str], tree: Path) -> None:
    for file_name in file_names:
        link = out / "train" / name / file_name
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(tree / "train" / name / file_name)
    (out / "test").mkdir(parents=True, exist_ok=True)


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
        if out.exists():
            continue
        chosen = [int(name) for label in LABELS for name in ranked(pools[label])[:size]]
        write(out / "train", x, y, chosen)
        write(out / "test", test_x, test_y, test)
        print(f"wrote {out}: {size} validation images per class of {', '.join(names)}")


def run_cell(pool: str, epsilon: float, extra: list[str], tag: str | None, metrics: str = METRICS) -> None:
    words = [pool, f"eps{epsilon:g}", *(w.strip("-").replace("/", "_") for w in extra), *([tag] if tag else [])]
    name = "-".join(words)
    if Path("runs/ladder", name).exists():
        sys.exit(f"runs/ladder/{name} exists: move it away to measure the cell again")
    out = Path("runs/ladder") / name
    train = ["dpzoo", "train", str(LADDER / pool), "--method", "dp-mepf", "--epsilon", f"{epsilon:g}"]
    train += ["--out", str(out), "--overwrite", *extra]
    started = time.monotonic()
    out.parent.mkdir(parents=True, exist_ok=True)
    with (out.parent / f"{name}.log").open("w") as stream:
        subprocess.run(train, check=True, stdout=stream, stderr=subprocess.STDOUT)
    minutes = (time.monotonic() - started) / 60
    _score_and_record(name, pool, epsilon, " ".join(extra), out, train, minutes, metrics)


def _score_and_record(
    name: str, pool: str, epsilon: float | None, options: str, out: Path, train: list[str], minutes: float, metrics: str
) -> None:
    """Evaluate the model in ``out`` on the pool's test images and append its row (``epsilon`` None: σ = 0)."""
    log, scores = out.parent / f"{name}.log", out.parent / f"{name}.json"
    evaluate = ["dpzoo", "evaluate", str(out), "--dataset", str(LADDER / pool), "--metrics", metrics]
    evaluate += ["--num-samples", str(SAMPLES), "--runs", "1", "--json", str(scores), "--overwrite"]
    subprocess.run(evaluate, check=True, stdout=subprocess.DEVNULL)
    config = json.loads((out / "config.json").read_text())
    row = {
        "cell": name,
        "pool": pool,
        "epsilon": epsilon,
        "options": options,
        "base": _base(log),
        "release": _release(config),
        "steps": _line(log, "the fit's objective stopped moving") or _line(log, "the last stage trained"),
        "minutes": round(minutes, 1),
        "scores": json.loads(scores.read_text()),
        "train": shlex.join(train),
        "evaluate": shlex.join(evaluate),
    }
    with ROWS.open("a") as rows:
        rows.write(json.dumps(row) + "\n")
    print(json.dumps(row))


def run_sigma0(pool: str, shape: str, steps: int, metrics: str) -> None:
    """The σ = 0 diagnostic of a pool (a tuning pool: it is never published): the colour recipe at ``shape``, its
    generator fitted to the pool's exact embedding (the pool declared public, ``zoo.training.pretrain_public``) for at
    most ``steps`` steps, stopped when flat as ``dpzoo train`` stops it, then scored as a cell. Beside the private cell
    of the same pool and steps, it says whether the noise or the fit limits the release."""
    import yaml

    from zoo.folder_training import FLAT_WINDOW
    from zoo.recipes import recipe_files
    from zoo.release_shapes import shapes_for

    name = f"{pool}-sigma0-{shape}-max-steps-{steps}"
    out = Path("runs/ladder") / name
    if out.exists():
        sys.exit(f"{out} exists: move it away to measure the diagnostic again")
    (recipe,) = [r for r in recipe_files() if (r.method, r.dataset, r.epsilon) == ("dp-mepf", "cifar10", 10)]
    settings = yaml.safe_load(recipe.path.read_text())
    (changes,) = [s.changes for s in shapes_for("dp-mepf", 3) if s.name == shape]
    model = settings["model"]["init_args"]
    classes = len(list((LADDER / pool / "train").iterdir()))
    model.update({**changes, "num_classes": classes, "stop_when_flat": FLAT_WINDOW})
    folder = {"root": str(LADDER / pool), "validation_size": 0}
    images = {"class_path": "zoo.data.ImageFolderDataModule", "init_args": folder}
    settings["data"] = {
        "class_path": "zoo.data.PublicData",
        "init_args": {"data": images, "source": f"{pool}: a tuning pool declared public for the σ = 0 diagnostic only"},
    }
    settings.pop("privacy")
    settings["save_pretrained"] = str(out)
    settings["trainer"]["max_steps"] = steps
    config = out.parent / f"{name}.yaml"
    out.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(yaml.safe_dump(settings, sort_keys=False, allow_unicode=True))
    train = ["dpzoo", "fit", "--config", str(config)]
    started = time.monotonic()
    with (out.parent / f"{name}.log").open("w") as stream:
        subprocess.run(train, check=True, stdout=stream, stderr=subprocess.STDOUT)
    minutes = (time.monotonic() - started) / 60
    _score_and_record(name, pool, None, f"σ = 0 diagnostic, {shape}, --max-steps {steps}", out, train, minutes, metrics)


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


def _base_of(row: dict) -> str:
    """The row's base: as its log named it, else as its options gave it (older logs named none), else none."""
    words = row["options"].split()
    given = words[words.index("--init-from") + 1] if "--init-from" in words else None
    return row.get("base") or given or "none"


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
        budget = "σ = 0" if row["epsilon"] is None else f"{row['epsilon']:g}"
        print(
            f"| {row['pool']} | {budget} | {row['options'] or '(default)'} | {row['release']} | "
            f"{_base_of(row)} | {row['minutes']} | {scores.get('fid', float('nan')):.1f} | "
            f"{scores.get('cas_cnn', float('nan')):.1f} | "
            f"{scores.get('closeness', float('nan')):.2f} |"
        )


def forecasts() -> None:
    """Each private row's forecast signal-to-noise (at the release it made: shape, shared part, smallest class) beside
    the closeness it reached, lowest forecast first: the evidence ``zoo.forecast``'s thresholds are read from."""
    import re

    from zoo.forecast import release_sigma
    from zoo.release_shapes import class_sigma, shape_of, signal_to_noise

    print("| forecast | pool | ε | release | base | shrunk | closeness | CNN CAS |")
    print("|---|---|---|---|---|---|---|---|")
    measured, unshaped = [], []
    for line in ROWS.read_text().splitlines():
        row = json.loads(line)
        if row["epsilon"] is None:
            continue
        settings = json.loads((Path("runs/ladder") / row["cell"] / "config.json").read_text())["architecture"]
        shape = shape_of("dp-mepf", settings["image_shape"][0], settings)
        if shape is None:  # a shape tried on a tuning pool and not kept: no measured signal to forecast with
            unshaped.append(row["cell"])
            continue
        smallest = int(re.search(r"-n(\d+)", row["pool"]).group(1))
        sigma = class_sigma(release_sigma(row["epsilon"], 1e-5), settings.get("shared_weight", 0.0))
        measured.append((signal_to_noise(shape, sigma, smallest), row, settings))
    for ratio, row, settings in sorted(measured, key=lambda entry: entry[0]):
        scores = {name: result["value"] for name, result in row["scores"]["results"].items()}
        print(
            f"| {ratio:.2g} | {row['pool']} | {row['epsilon']:g} | {row['release']} | {_base_of(row)} | "
            f"{'yes' if settings.get('shrink_to_common') else 'no'} | {scores.get('closeness', float('nan')):.2f} | "
            f"{scores.get('cas_cnn', float('nan')):.1f} |"
        )
    if unshaped:
        print(f"\nnot forecast (their release is none of zoo.release_shapes' shapes): {', '.join(unshaped)}")


def composed(epsilons: list[float], delta: float) -> float:
    """The ε at ``delta`` of every cell's release on one record together: the ladder's pools are nested, so a record
    of a small pool is in every larger pool's cells too, and the published table composes their releases (each the
    one Gaussian release of its cell, σ calibrated as ``dpzoo train`` calibrates it; PLD composition)."""
    from zoo.forecast import release_sigma
    from zoo.privacy.accounting import epsilon_spent

    return epsilon_spent([(release_sigma(e, delta), 1.0, 1) for e in epsilons], delta, "pld")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("pools", help="write the ladder's pools under data/ladder")
    cell = commands.add_parser("cell", help="train and evaluate one cell")
    cell.add_argument("--pool", required=True)
    cell.add_argument("--epsilon", type=float, required=True)
    cell.add_argument("--tag", default=None, help="a word for the cell's name, to tell two runs of one cell apart")
    cell.add_argument("--metrics", default=METRICS, help=f"what to score (default: {METRICS})")
    sigma0 = commands.add_parser("sigma0", help="the σ = 0 diagnostic of a tuning pool (never published)")
    sigma0.add_argument("--pool", required=True)
    sigma0.add_argument("--shape", default="pooled", help="the release shape to fit (default: pooled)")
    sigma0.add_argument("--max-steps", type=int, default=800)
    sigma0.add_argument("--metrics", default=METRICS, help=f"what to score (default: {METRICS})")
    compose = commands.add_parser("compose", help="the ε of the cells that share a record, composed")
    compose.add_argument("--epsilons", required=True, help="each cell's ε, comma-separated, e.g. 10,10,1")
    compose.add_argument("--delta", type=float, default=1e-5)
    commands.add_parser("table", help="print every measured row")
    commands.add_parser("forecasts", help="print each row's forecast beside its closeness")
    args, extra = parser.parse_known_args()
    if args.command == "pools":
        source = source_data_dir()
        if source is None:
            sys.exit(f"set {DATA_DIR_ENV} to the folder holding {named_or_refused('cifar10').settings['tree']}/")
        cifar10_pools(source)
        fashion_pools()
    elif args.command == "cell":
        run_cell(args.pool, args.epsilon, [word for word in extra if word != "--"], args.tag, args.metrics)
    elif args.command == "sigma0":
        if not args.pool.startswith("tune-"):
            sys.exit("the σ = 0 diagnostic runs on a tuning pool (tune-…) only: its model is never published")
        run_sigma0(args.pool, args.shape, args.max_steps, args.metrics)
    elif args.command == "compose":
        epsilons = [float(e) for e in args.epsilons.split(",")]
        print(
            f"{len(epsilons)} releases on one record together: ε = {composed(epsilons, args.delta):.3g} "
            f"at δ = {args.delta:g}"
        )
    elif args.command == "forecasts":
        forecasts()
    else:
        table()


if __name__ == "__main__":
    main()
