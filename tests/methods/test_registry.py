"""The method registry: a name names one class, and every registered method has its page in the docs."""

from __future__ import annotations

import pytest

from zoo.methods import docs_page, method_class, register_method, registered_methods
from zoo.release.model_table import METHOD_PAGES, method_order


def test_a_name_registered_twice_is_refused_naming_both_classes():
    registered = method_class("dp-merf")

    class Impostor(registered):
        pass

    with pytest.raises(ValueError, match="'dp-merf' is registered twice") as refused:
        register_method(Impostor)
    assert f"{registered.__module__}.{registered.__qualname__}" in str(refused.value)
    assert "Impostor" in str(refused.value)
    assert method_class("dp-merf") is registered


@pytest.mark.parametrize("method", sorted(registered_methods()))
def test_every_registered_method_has_a_docs_page_in_the_navigation(method):
    page = docs_page(method)
    assert (METHOD_PAGES / f"{page}.md").is_file(), f"{method}: write docs/methods/{page}.md or set its docs_page"
    assert page in method_order(), f"{method}: list methods/{page}.md in mkdocs.yml's nav"
