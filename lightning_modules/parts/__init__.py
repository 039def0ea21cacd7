"""Parts that several method files share: a method's private helpers and their draws (``helper_parts``),
central images (``central_images``), mean embeddings (``mean_embedding``), guided Langevin sampling
(``langevin``), sample post-processing (``postprocess``) and released labelled sets (``released_sets``)."""
