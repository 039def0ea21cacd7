"""The shipped image sources (``zoo.data.sources``): the named sets, the kinds of local data, and the other public
record universes the ledger knows by name. Imported on the first lookup of the registry; torch-free."""

from __future__ import annotations

from zoo.data import datasets_source, table_source
from zoo.data.sources import (
    FOLDER,
    LocalImages,
    NamedImages,
    RealDataReference,
    register_local,
    register_named,
    register_public_records,
)

DIGITS = tuple(str(digit) for digit in range(10))
CLOTHES = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot")
CIFAR10 = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")
LOADER = "zoo.data.images:load_named"


def _lenet_set(name: str, title: str, classes: tuple[str, ...], torchvision: str) -> NamedImages:
    """A 28×28 grey set in torchvision's raw layout offline, on which dpzoo's LeNet was trained."""
    return NamedImages(
        name=name,
        title=title,
        image_shape=(1, 28, 28),
        classes=classes,
        loader=LOADER,
        offline_help=f"a folder holding {torchvision}/raw/*.gz (torchvision's layout)",
        lenet=True,
        settings={"torchvision": torchvision},
    )


register_named(_lenet_set("mnist", "MNIST", DIGITS, "MNIST"))
register_named(_lenet_set("fashion_mnist", "Fashion-MNIST", CLOTHES, "FashionMNIST"))
register_named(
    NamedImages(
        name="cifar10",
        title="CIFAR-10",
        image_shape=(3, 32, 32),
        classes=CIFAR10,
        loader=LOADER,
        offline_help="a folder holding cifar10-images/{train,test}/<class>/*.jpg",
        # measured once, in one thread, in 26.8 minutes
        cas_references={
            "resnet": RealDataReference(
                accuracy=62.49,
                epochs=20,
                augment=True,
                train="the 10,000 CIFAR-10 validation images every CIFAR-10 recipe holds out (no shipped model "
                "protects them)",
                runs=1,
                command="python experiments/cas_resnet/cas_resnet_settings.py --epochs 20 --augment --reference",
            )
        },
        settings={"torchvision": "CIFAR10", "tree": "cifar10-images"},
    )
)

#: the named tables' training rows (``zoo.data.tables.TABLES``) and the public networks' training data
#: (``lightning_modules.nets.public_networks``), which a test holds to these
register_public_records(
    *(f"{table}/train" for table in ("lifesci", "gaussians", "half_moons", "pinwheel")), "imagenet-1k/train"
)

register_local(
    LocalImages(
        name="datasets",
        title="a Hugging Face datasets dataset saved to disk",
        recognises=datasets_source.recognises,
        parts="zoo.data.datasets_source:datasets_parts",
        check_columns=datasets_source.check_columns,
        needs=("datasets",),
        extra="datasets",
    )
)


def _table(suffix: str, title: str, needs: tuple[str, ...] = ()) -> LocalImages:
    """A table of one row per image, recognised by its file's suffix (``zoo.data.table_source``)."""
    return LocalImages(
        name=suffix,
        title=title,
        recognises=lambda path: path.is_file() and path.suffix.lower() == f".{suffix}",
        parts="zoo.data.table_source:table_parts",
        check_columns=table_source.check_columns,
        needs=needs,
        extra="datasets" if needs else "",
    )


register_local(_table("csv", "a CSV table of image paths and labels"))
register_local(_table("parquet", "a Parquet table of images (paths or bytes) and labels", needs=("pyarrow",)))
register_local(
    LocalImages(
        name=FOLDER,
        title="an image folder (one sub-folder per class)",
        recognises=lambda path: path.is_dir(),
        parts="zoo.data.folders:folder_source_parts",
    )
)
