"""Nothing from the libraries' insides reaches a `dpzoo` user (issue 68): a private training (`dpzoo fit`, DP-SGD
through Lightning, on a folder holding a file that is not an image) and its evaluation (CAS and FID, whose Inception
is read from TorchScript once) print no warning at a file and line, neither a library's (Lightning's LeafSpec and
IterableDataset warnings, torch.jit.load's) nor dpzoo's own, which is said as the command's own line. Run in a
fresh process with Python's default warning filters, as the `dpzoo` script runs."""

import json
import os
import re
import subprocess
import sys

from tests.folders import write_image_folder

PROBE = """
import json, sys
from zoo.cli import main
for argv in json.loads(sys.argv[1]):
    print(json.dumps(main(argv)), flush=True)
"""
#: a warning printed at its source: ``path/to/file.py:123: message`` (a library's under site-packages)
AT_A_LINE = re.compile(r"\S+\.py:\d+: ")
#: a DP-LFlow small enough to train a few steps in seconds
TINY_LFLOW = ["--model.init_args.channels", "[4, 8]", "--model.init_args.flow_blocks", "2"]
TINY_LFLOW += ["--model.init_args.flow_hidden", "16", "--model.init_args.latent_dim", "4"]


def test_fit_and_evaluate_print_no_warning_of_a_librarys_insides(tmp_path):
    folder = write_image_folder(tmp_path / "pets", per_class=10, size=(24, 24), test_per_class=4)
    (folder / "train" / "cats" / "notes.txt").write_text("not an image")
    model = tmp_path / "model"
    fit = ["fit", "--config", "configs/dp_lflow_mnist_eps1.yaml", "--images", str(folder), *TINY_LFLOW]
    fit += ["--trainer.max_steps", "2", "--trainer.enable_progress_bar", "false", "--save_pretrained", str(model)]
    evaluate = ["evaluate", str(model), "--dataset", str(folder), "--num-samples", "30"]
    argvs = [fit, [*evaluate, "--metrics", "cas_mlp,fid", "--runs", "1", "--epochs", "1"]]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}  # the script's default filters
    result = subprocess.run([sys.executable, "-c", PROBE, json.dumps(argvs)], capture_output=True, text=True, env=env)
    assert [json.loads(line) for line in result.stdout.splitlines() if line in ("0", "1", "2")] == [0, 0], result.stderr
    at_a_line = [line for line in result.stderr.splitlines() if AT_A_LINE.match(line)]
    assert not at_a_line, "warnings printed at a file and line:\n" + "\n".join(at_a_line)
    assert "Warning" not in result.stderr, result.stderr
    ignored = f"dpzoo fit: warning: {folder / 'train'}: ignored 1 file that is not an image: cats/notes.txt"
    assert ignored in result.stderr.splitlines()
