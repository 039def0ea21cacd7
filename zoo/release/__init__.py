"""What leaves the training machine: the Hub layout of a model folder (``layout``), where model ids live
(``registry``), saving, loading and publishing (``hub``, ``loading``), and what a folder shows of itself
(``cards``, ``evaluation_results``, ``index`` for MODEL_CARDS.md, ``results_table``, ``literature``)."""
