# onnxdata: every job a developer or CI runs. Each target sets up what it needs.
PYTHON ?= python3
VENV := .venv
VENV_GEN := .venv-gen
VENV_PLUGIN := .venv-plugin
VENV_OLD := .venv-old
PY := $(VENV)/bin/python
PLUGIN := $(VENV_PLUGIN)/bin/protoc-gen-mypy
TYPING_TREE := build/typing/onnxdata/generated
EXAMPLE := tests/data/onnx-node/test_loop16_seq_none/test_data_set_0/input_2.pb

# Every onnx release line from 1.16 to 1.22; 1.23.2 is in .venv.
ONNX_VERSIONS := 1.16.2 1.17.0 1.18.0 1.19.1 1.20.1 1.21.0 1.22.0

.PHONY: run test test-new test-old test-onnx-versions lint gen check-gen bench fuzz fuzz-ci fuzz-regress clean

run: $(VENV)/.ok
	$(PY) -m onnxdata explore $(EXAMPLE)
	$(PY) -m onnxdata explore tests/data/onnx-node/test_optional_has_element_empty_optional_input/test_data_set_0/input_0.pb
	$(PY) -m onnxdata explore tests/data/onnx-node/test_abs/test_data_set_0/input_0.pb

# The main suite runs last, so its summary closes the output.
test: $(VENV)/.ok $(VENV_OLD)/.ok $(VENV_GEN)/.ok $(VENV_PLUGIN)/.ok
	$(MAKE) check-gen lint fuzz-regress fuzz-ci test-old test-onnx-versions test-new

test-new: $(VENV)/.ok $(VENV_GEN)/.ok $(VENV_PLUGIN)/.ok
	ONNXDATA_REQUIRE_GEN=1 ONNXDATA_INSTALL_TESTS=1 $(PY) -m pytest -q

# The same suite on the oldest protobuf runtime we support; onnx tests skip there.
test-old: $(VENV_OLD)/.ok
	$(VENV_OLD)/bin/python -m pytest -q -p no:cacheprovider

# The coexistence tests against each older onnx, one venv per release.
test-onnx-versions: $(foreach v,$(ONNX_VERSIONS),.venv-onnx-$(v)/.ok)
	@for v in $(ONNX_VERSIONS); do \
	  echo "== onnx $$v"; \
	  .venv-onnx-$$v/bin/python -m pytest -q -p no:cacheprovider tests/test_coexist.py || exit 1; \
	done

.venv-onnx-%/.ok: pyproject.toml
	$(PYTHON) -m venv .venv-onnx-$*
	.venv-onnx-$*/bin/pip install -q "onnx==$*" $(if $(filter 1.16.%,$*),"numpy<2") pytest -e .
	touch $@

lint: $(VENV)/.ok $(TYPING_TREE)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy onnxdata tests/typing/user_code.py

gen: $(VENV_GEN)/.ok $(VENV_PLUGIN)/.ok
	$(VENV_GEN)/bin/python tools/gen.py --plugin $(PLUGIN)

check-gen: $(VENV_GEN)/.ok $(VENV_PLUGIN)/.ok
	$(VENV_GEN)/bin/python tools/gen.py --plugin $(PLUGIN) --check

bench: $(VENV)/.ok
	$(PY) bench/run.py $(ARGS)

# Fuzz every atheris harness in turn for SECONDS each (tests/fuzz/run.py; FUZZ=names
# to pick some). fuzz-ci is the bounded CI slice: 8 harnesses x 18 s. fuzz-regress
# replays every input in tests/data/fuzz-regressions/ through every harness.
SECONDS ?= 60
FUZZ ?= all
fuzz: $(VENV)/.ok
	$(PY) tests/fuzz/run.py --seconds $(SECONDS) $(FUZZ)

fuzz-ci: $(VENV)/.ok
	$(PY) tests/fuzz/run.py --seconds 18 all

fuzz-regress: $(VENV)/.ok
	$(PY) tests/fuzz/run.py --regress

$(VENV)/.ok: pyproject.toml tools/requirements-dev.txt | $(TYPING_TREE)
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q -r tools/requirements-dev.txt -e .
	touch $@

# generated/ ships as onnxdata.generated (pyproject's package-dir). Python finds it
# through the editable install; mypy reads this link instead (pyproject's mypy_path).
$(TYPING_TREE):
	mkdir -p $(dir $@)
	ln -sfn ../../../generated $@

$(VENV_OLD)/.ok: pyproject.toml tools/requirements-old.txt
	$(PYTHON) -m venv $(VENV_OLD)
	$(VENV_OLD)/bin/pip install -q -r tools/requirements-old.txt -e .
	touch $@

$(VENV_GEN)/.ok: tools/requirements-gen.txt
	$(PYTHON) -m venv $(VENV_GEN)
	$(VENV_GEN)/bin/pip install -q -r tools/requirements-gen.txt
	touch $@

$(VENV_PLUGIN)/.ok: tools/requirements-plugin.txt
	$(PYTHON) -m venv $(VENV_PLUGIN)
	$(VENV_PLUGIN)/bin/pip install -q -r tools/requirements-plugin.txt
	touch $@

clean:
	rm -rf $(VENV) $(VENV_OLD) $(VENV_GEN) $(VENV_PLUGIN) .venv-onnx-* build *.egg-info
