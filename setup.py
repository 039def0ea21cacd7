"""Everything about the distribution is in pyproject.toml except what it cannot say: the
repository's top-level ``checkpoints/`` goes into the wheel as the package ``dpzoo_checkpoints``,
so an installed zoo finds its shipped models (``zoo.release.registry.checkpoints_dir``) while the folder
stays where the Hub layout and the README expect it."""

from setuptools import find_namespace_packages, setup

setup(
    packages=[*find_namespace_packages(include=["zoo*", "lightning_modules*"]), "dpzoo_checkpoints"],
    package_dir={"dpzoo_checkpoints": "checkpoints"},
    package_data={
        "zoo": [
            "release/model_index.json",
            "release/templates/*.md",
            "metrics/weights/*.safetensors",
            "metrics/weights/*.json",
            "metrics/statistics/*.safetensors",
        ],
        "dpzoo_checkpoints": ["*/*"],
    },
)
