# onnxdata: every job a developer or CI runs. Each target sets up what it needs.
PYTHON ?= python3
VENV := .venv
VENV_GEN := .venv-gen
VENV_PLUGIN := .venv-plugin
VENV_OLD := .venv-old
PY := $(VENV)/bin/python
PLUGIN := $(VENV_PLUGIN)/bin/protoc-gen-mypy
EXAMPLE := tests/data/onnx-node/test_loop16_seq_none/test_data_set_0/input_2.pb

.PHONY: run test test-new test-old lint gen check-gen bench fuzz clean

run: $(VENV)/.ok
	$(PY) -m onnxdata show --kind optional $(EXAMPLE)

test: $(VENV)/.ok $(VENV_OLD)/.ok $(VENV_GEN)/.ok $(VENV_PLUGIN)/.ok
	$(MAKE) check-gen lint test-new test-old

test-new: $(VENV)/.ok $(VENV_GEN)/.ok $(VENV_PLUGIN)/.ok
	ONNXDATA_REQUIRE_GEN=1 $(PY) -m pytest -q

# The same suite on the oldest protobuf runtime we support; onnx tests skip there.
test-old: $(VENV_OLD)/.ok
	$(VENV_OLD)/bin/python -m pytest -q -p no:cacheprovider

lint: $(VENV)/.ok
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy onnxdata tests/typing/user_code.py

gen: $(VENV_GEN)/.ok $(VENV_PLUGIN)/.ok
	$(VENV_GEN)/bin/python tools/gen.py --plugin $(PLUGIN)

check-gen: $(VENV_GEN)/.ok $(VENV_PLUGIN)/.ok
	$(VENV_GEN)/bin/python tools/gen.py --plugin $(PLUGIN) --check

bench: $(VENV)/.ok
	$(PY) bench/run.py

$(VENV)/.ok: pyproject.toml tools/requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q -r tools/requirements-dev.txt -e .
	touch $@

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
	rm -rf $(VENV) $(VENV_OLD) $(VENV_GEN) $(VENV_PLUGIN) build *.egg-info
