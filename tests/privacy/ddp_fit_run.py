"""Run by test_ddp.py as a script: ``dpzoo fit ARGS`` under Lightning's DDP launcher, which re-executes
this script once per rank. Each rank writes its exit code to ``OUT/rank<r>.exit``, and the rank of every
call of ``write_model_folder`` (the model folder written) to ``OUT/saves``."""

import sys
import warnings
from pathlib import Path

import torch
from pytorch_lightning.utilities import rank_zero_only

import zoo.fit
from zoo.cli import main


def record_saves(out_dir: str) -> None:
    save = zoo.fit.write_model_folder

    def recorded(*args, **kwargs):
        with Path(out_dir, "saves").open("a") as saves:
            saves.write(f"{rank_zero_only.rank}\n")
        return save(*args, **kwargs)

    zoo.fit.write_model_folder = recorded


def run(out_dir: str, argv: list[str]) -> int:
    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    record_saves(out_dir)
    code = 1
    try:
        code = main(["fit", *argv])
    finally:
        Path(out_dir, f"rank{rank_zero_only.rank}.exit").write_text(str(code))
    return code


if __name__ == "__main__":
    sys.exit(run(sys.argv[1], sys.argv[2:]))
