"""A refusal names its remedy in the words of the front end that shows it: the Python API's arguments in
``str(error)``, the command line's flags in ``dpzoo``'s message (``UserError.for_command``)."""

from zoo.errors import UserError


def test_a_remedy_is_spelled_by_each_front_end():
    error = UserError("out/{run} already holds a model; pass {overwrite} to replace it", overwrite="overwrite=True")
    assert str(error) == "out/{run} already holds a model; pass overwrite=True to replace it"  # braces of a path kept
    assert error.for_command() == "out/{run} already holds a model; pass --overwrite to replace it"


def test_a_remedy_without_command_words_keeps_the_python_spelling_and_a_plain_message_is_unchanged():
    assert UserError("pass {seed}", seed="seed=None").for_command() == "pass seed=None"
    assert UserError("--epsilon must be > 0").for_command() == "--epsilon must be > 0"
