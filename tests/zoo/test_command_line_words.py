"""Command-line words on the command line (issue 68): the refusals of `dpzoo evaluate`, `train` and `sample` that
named their choices as Python lists (unknown metrics and datasets, class folders, a model's unknown method) name
them as words, and a private Hub repository's remedy is one a `dpzoo` user can take (no `--token` exists there).
No message holds `=True`, `token=...` or a Python list literal. An unknown model id gets a did-you-mean and
`dpzoo list`, never a dump of the ids nor a path of this machine."""

import json
import re
import shutil
from pathlib import Path

from huggingface_hub.errors import RepositoryNotFoundError

from tests.folders import write_image_folder
from zoo.cli import main
from zoo.release.registry import checkpoints_dir, model_ids

#: a Python list as str() writes one: ``['a', 'b']`` or ``[1, 2]``
LIST_LITERAL = re.compile(r"\[\s*(['\"]|\d)")
#: this checkout, whose path a message must not show
CHECKOUT = Path(__file__).resolve().parents[2]


def refusals(tmp_path):
    """(argv, the words of its one-line refusal)."""
    pets = write_image_folder(tmp_path / "pets", per_class=1, size=(8, 8), classes=("cats", "dogs"))
    split = write_image_folder(tmp_path / "split", per_class=1, size=(8, 8), classes=("cats", "dogs"), test_per_class=1)
    shutil.rmtree(split / "test" / "dogs")
    renamed = shutil.copytree(checkpoints_dir() / "dp-merf-mnist-eps1", tmp_path / "renamed")
    config = json.loads((renamed / "config.json").read_text())
    (renamed / "config.json").write_text(json.dumps({**config, "method": "dp-mref"}))
    train = ["--method", "dp-merf", "--epsilon", "1", "--out", str(tmp_path / "never")]
    return [
        (["evaluate", "dp-merf-mnist-eps1", "--metrics", "foo"], "unknown metrics for mnist: foo; known: cas, cas_lr"),
        (["evaluate", "dp-merf-mnist-eps1", "--dataset", "nonsense"], "known are cifar10, fashion_mnist, "),
        (["train", str(pets), *train, "--classes", "cats"], "class folders dogs that are not among the classes given"),
        (["train", str(pets), *train, "--classes", "cats,cats"], "class-folder names, at least one, got 'cats'"),
        (["train", str(split), *train], "test/ has classes cats but train/ has cats, dogs"),
        (["sample", str(renamed), "--out", str(tmp_path / "s.png")], "unknown method 'dp-mref'; known methods: dp-"),
        (["sample", "hf-hub:someone/private-model"], "(or it is private: set HF_TOKEN or run `hf auth login`)"),
    ]


def test_refusals_name_their_choices_in_words_not_python(tmp_path, monkeypatch, capsys):
    def not_found(*args, **kwargs):
        raise RepositoryNotFoundError.__new__(RepositoryNotFoundError)  # as the Hub answers a private repository

    monkeypatch.setattr("zoo.release.loading.snapshot_download", not_found)
    for argv, words in refusals(tmp_path):
        assert main(argv) == 2, argv
        error = capsys.readouterr().err
        assert words in error, (argv, error)
        assert "=True" not in error and "token=" not in error and not LIST_LITERAL.search(error), (argv, error)
        assert error.count("\n") == 1, error


def test_an_unknown_model_id_gets_a_did_you_mean_and_dpzoo_list_not_a_list_or_a_path(capsys):
    """`sample`, `evaluate` and `push` answer an unknown id alike: the closest known ids where one is near, and
    `dpzoo list` for the rest, never every id nor where this machine keeps them."""
    for command in (["sample"], ["evaluate"], ["push"]):
        tail = ["me/model"] if command == ["push"] else []
        assert main([*command, "dp-merf-mnsit-eps1", *tail]) == 2
        typo = capsys.readouterr().err
        assert "(did you mean dp-merf-mnist-eps1 or " in typo and "`dpzoo list` shows the ids" in typo
        assert main([*command, "no-such-model", *tail]) == 2
        unknown = capsys.readouterr().err
        assert "unknown model 'no-such-model': " in unknown and "did you mean" not in unknown
        for error in (typo, unknown):
            named = [model_id for model_id in model_ids() if re.search(rf"\b{re.escape(model_id)}\b", error)]
            assert error.count("\n") == 1 and not LIST_LITERAL.search(error) and len(named) <= 3, error
            assert str(CHECKOUT) not in error and str(checkpoints_dir()) not in error, error
