# Each target sets up its own virtual environment first (one consistent torch/torchvision
# pair from the package registry, see constraints.txt).
VENV ?= .venv
PYTHON ?= python3
BIN := $(VENV)/bin
SHARED_DATA := $(abspath ../shared/data)
# Offline build machines keep MNIST beside the project; elsewhere torchvision downloads it.
export DPZOO_DATA_DIR ?= $(if $(wildcard $(SHARED_DATA)/MNIST/raw),$(SHARED_DATA),)

.PHONY: demo test test-slow benchmark docs

$(BIN)/.installed: pyproject.toml setup.py constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev,fid,mepf,datasets]'
	$(BIN)/python -c "import torch, torchvision.ops; print('torch', torch.__version__, 'torchvision', torchvision.__version__)"
	touch $@

demo: $(BIN)/.installed
	$(BIN)/dpzoo list
	$(BIN)/dpzoo sample dp-lflow-mnist-eps1 --n 100 --out demo/samples.png

test: $(BIN)/.installed
	$(BIN)/ruff check zoo lightning_modules tests benchmarks experiments
	$(BIN)/mypy
	$(BIN)/mkdocs build --strict --site-dir build/site
	$(BIN)/python -m pytest -n 2
	$(BIN)/python -m pytest -n 2 -m heavy

docs: $(BIN)/.installed
	$(BIN)/mkdocs serve

test-slow: $(BIN)/.installed
	$(BIN)/python -m pytest -m slow

benchmark: $(BIN)/.installed
	$(BIN)/python benchmarks/dp_step_time.py
