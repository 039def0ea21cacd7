"""Real-data references for CAS: what a classifier trained on real, never-protected images of the size of a
card's synthetic set reaches under the same protocol, so a card's CAS reads against a ceiling. Each named set
declares its own (``zoo.data.sources.NamedImages.cas_references``)."""

from __future__ import annotations

from zoo.data.sources import RealDataReference, named_sources


def real_data_reference(classifier: str, test: str, epochs: int | None, augment: bool) -> RealDataReference | None:
    """The reference measured for ``classifier`` tested on ``test`` (a named set's test split, by its description)
    with the same ``epochs`` and ``augment``."""
    references = [s.cas_references.get(classifier) for s in named_sources().values() if s.test_description == test]
    reference = references[0] if references else None
    if reference is None or (reference.epochs, reference.augment) != (epochs, augment):
        return None
    return reference
