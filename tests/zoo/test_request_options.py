"""A command's options are declared once, on its request's fields (issue 68): a toy field added to dpzoo train's
request reaches the parser, its help and the card's command, and an option at its default stays off the card."""

import argparse
from dataclasses import dataclass

import pytest

from zoo.cli import Command
from zoo.option_tables import option_table
from zoo.request_options import add_arguments, card_command, option, request_from
from zoo.train_request import TrainRequest


@dataclass(frozen=True)
class ToyTrain(TrainRequest):
    colour_jitter: float | None = option("jitter each image's colours by this much", None, parse=float)


def parsed(request_type, argv):
    parser = argparse.ArgumentParser(prog="dpzoo train")
    add_arguments(parser, request_type)
    return parser, request_from(parser.parse_args(argv), request_type)


def test_one_field_reaches_the_parser_its_help_and_the_card_command():
    parser, request = parsed(ToyTrain, ["photos", "--method", "dp-mepf", "--epsilon", "2", "--colour-jitter", "0.1"])
    assert request == ToyTrain("photos", "dp-mepf", 2.0, colour_jitter=0.1)
    assert "jitter each image's colours by this much" in parser.format_help()
    assert request.card_command() == "dpzoo train photos --method dp-mepf --epsilon 2 --colour-jitter 0.1"
    table = option_table(Command("train", "train", ToyTrain, lambda request: 0))  # docs/commands.md's table
    assert "| `--colour-jitter COLOUR_JITTER` | — | jitter each image's colours by this much |" in table


def test_defaults_output_folders_and_overwrite_stay_off_the_card_and_required_options_are_required():
    _, request = parsed(TrainRequest, ["photos", "--method", "dp-merf", "--epsilon", "1", "--out", "x", "--overwrite"])
    assert card_command(("dpzoo", "train"), request) == "dpzoo train photos --method dp-merf --epsilon 1"
    with pytest.raises(SystemExit):
        parsed(TrainRequest, ["photos", "--epsilon", "1"])
