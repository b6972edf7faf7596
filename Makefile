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
# Venvs are built JOBS at a time (pip mostly waits on unpacking). Each installs our
# dependencies from one wheel built first (so they are listed only in pyproject),
# then onnxdata itself editable; that step writes onnxdata.egg-info in the checkout,
# so it takes a lock.
JOBS ?= 4
WHEEL := build/wheel/.ok
DEPS := build/wheel/onnxdata-*.whl
EDITABLE = flock build/.pip-lock $(1)/bin/pip install -q --no-deps -e .

# Every onnx release line from 1.16 to 1.22; 1.23.2 is in .venv.
ONNX_VERSIONS := 1.16.2 1.17.0 1.18.0 1.19.1 1.20.1 1.21.0 1.22.0
ONNX_VENVS := $(foreach v,$(ONNX_VERSIONS),.venv-onnx-$(v)/.ok)

# The main suite also runs on the oldest and newest Python we support, where pyenv
# has them (3.13 installs the newest numpy, 2.5 at the time of writing).
PYENV_ROOT := $(shell pyenv root 2>/dev/null)
PY310 := $(lastword $(sort $(wildcard $(PYENV_ROOT)/versions/3.10.*/bin/python3.10)))
PY313 := $(lastword $(sort $(wildcard $(PYENV_ROOT)/versions/3.13.*/bin/python3.13)))
PYENV_VENVS := $(if $(PY310),.venv-py3.10/.ok) $(if $(PY313),.venv-py3.13/.ok)

ALL_VENVS := $(VENV)/.ok $(VENV_OLD)/.ok $(VENV_GEN)/.ok $(VENV_PLUGIN)/.ok $(ONNX_VENVS) \
	$(PYENV_VENVS)

.PHONY: run browser test check venvs test-new test-old test-onnx-versions test-pythons lint gen \
	check-gen bench fuzz fuzz-ci fuzz-regress clean test-pure

run: $(VENV)/.ok
	$(PY) -m onnxdata explore $(EXAMPLE)
	$(PY) -m onnxdata explore $(EXAMPLE) --html $(CURDIR)/explore.html
	$(PY) -m onnxdata explore tests/data/onnx-node/test_optional_has_element_empty_optional_input/test_data_set_0/input_0.pb
	$(PY) -m onnxdata explore tests/data/onnx-node/test_abs/test_data_set_0/input_0.pb
	@# onnxdata run on ONNX Runtime: a sequence output, then an optional(sequence) input
	$(PY) -m onnxdata run tests/data/onnx-node/test_sequence_insert_at_back
	$(PY) -m onnxdata run tests/data/onnx-node/test_loop16_seq_none
	@echo "the onnxdata command is .venv/bin/onnxdata (or: . .venv/bin/activate)"

# The edit loop: lint and the main suite without its slow tests (pytest -m slow lists
# them; make test runs them), on 2 workers, in under two minutes.
check: $(VENV)/.ok
	$(MAKE) lint
	$(PY) -m pytest -q -x -n 2 -m "not slow" -p no:cacheprovider

# Everything, from nothing: the venvs JOBS at a time, then the checks; the suites on
# other runtimes two at a time (2 cores), and the main suite last, so its summary
# closes the output.
test: browser
	$(MAKE) -j$(JOBS) venvs
	$(MAKE) check-gen lint fuzz-regress
	$(MAKE) -j2 --output-sync=target fuzz-ci test-old test-onnx-versions test-pythons \
	  test-pure
	$(MAKE) test-new

venvs: $(ALL_VENVS)

test-new: $(VENV)/.ok $(VENV_GEN)/.ok $(VENV_PLUGIN)/.ok browser
	ONNXDATA_REQUIRE_GEN=1 ONNXDATA_INSTALL_TESTS=1 $(PY) -m pytest -q -p no:cacheprovider

# The page test's browser: Debian's chromium, driven by playwright (tools/requirements-dev.txt)
# with executable_path, so `playwright install` never downloads one. Installed only when
# missing and when root; elsewhere tests/test_page.py's browser tests skip and say why.
browser:
	@command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ] || \
	  { if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	      { apt-get update -q && apt-get install -y -q chromium; } || \
	        echo "could not install chromium: the browser tests will skip"; \
	    else echo "no chromium and not root: the browser tests will skip"; fi; }

# The same suite with the Python walk and numpy's varint decoder (ONNXDATA_PURE_PYTHON=1:
# the compiled loops are not imported), as where no C compiler is at hand: the reference
# twins must pass on their own.
test-pure: $(VENV)/.ok
	ONNXDATA_PURE_PYTHON=1 $(PY) -m pytest -q -p no:cacheprovider

# The same suite on the oldest protobuf runtime we support; onnx tests skip there.
test-old: $(VENV_OLD)/.ok
	$(VENV_OLD)/bin/python -m pytest -q -p no:cacheprovider

# The coexistence tests against each older onnx, one venv per release.
test-onnx-versions: $(ONNX_VENVS)
	@for v in $(ONNX_VERSIONS); do \
	  echo "== onnx $$v"; \
	  .venv-onnx-$$v/bin/python -m pytest -q -p no:cacheprovider tests/test_coexist.py || exit 1; \
	done

.venv-onnx-%/.ok: pyproject.toml $(WHEEL)
	rm -rf .venv-onnx-$*
	$(PYTHON) -m venv .venv-onnx-$*
	.venv-onnx-$*/bin/pip install -q "onnx==$*" $(if $(filter 1.16.%,$*),"numpy<2") pytest \
	  $(DEPS)
	$(call EDITABLE,.venv-onnx-$*)
	touch $@

# The main suite on Python 3.10 and 3.13 (newest numpy, protobuf, onnx 1.23.2).
test-pythons: $(PYENV_VENVS)
	@for v in 3.10 3.13; do \
	  if [ -x .venv-py$$v/bin/python ]; then \
	    echo "== python $$v"; \
	    .venv-py$$v/bin/python -m pytest -q -p no:cacheprovider || exit 1; \
	  else \
	    echo "== python $$v: skipped, pyenv has no python$$v (pyenv root: '$(PYENV_ROOT)')"; \
	  fi; \
	done

.venv-py3.10/.ok: pyproject.toml tools/requirements-pythons.txt $(WHEEL)
	rm -rf .venv-py3.10
	$(PY310) -m venv .venv-py3.10
	.venv-py3.10/bin/pip install -q -r tools/requirements-pythons.txt $(DEPS)
	$(call EDITABLE,.venv-py3.10)
	touch $@

.venv-py3.13/.ok: pyproject.toml tools/requirements-pythons.txt $(WHEEL)
	rm -rf .venv-py3.13
	$(PY313) -m venv .venv-py3.13
	.venv-py3.13/bin/pip install -q -r tools/requirements-pythons.txt $(DEPS)
	$(call EDITABLE,.venv-py3.13)
	touch $@

build:
	mkdir -p build

# Our wheel, whose metadata gives every venv the dependencies pyproject lists: pure
# (ONNXDATA_PURE_PYTHON=1: no compiled varint loop), so venvs of any Python install it.
# Every venv depends on it, so a change to the loop rebuilds them (their editable
# installs compile it in place).
$(WHEEL): pyproject.toml setup.py onnxdata/_varints.pyx onnxdata/_walk.pyx \
		onnxdata/_layouts.pyx onnxdata/_wire.pxd | build
	rm -rf build/wheel
	ONNXDATA_PURE_PYTHON=1 flock build/.pip-lock $(PYTHON) -m pip wheel -q --no-deps \
	  -w build/wheel .
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
# to pick some). fuzz-ci is the bounded CI slice: 8 harnesses x 8 s. fuzz-regress
# replays every input in tests/data/fuzz-regressions/ through every harness.
SECONDS ?= 60
FUZZ ?= all
fuzz: $(VENV)/.ok
	$(PY) tests/fuzz/run.py --seconds $(SECONDS) $(FUZZ)

fuzz-ci: $(VENV)/.ok
	$(PY) tests/fuzz/run.py --seconds 8 all

fuzz-regress: $(VENV)/.ok
	$(PY) tests/fuzz/run.py --regress

$(VENV)/.ok: pyproject.toml tools/requirements-dev.txt $(WHEEL) | $(TYPING_TREE)
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q -r tools/requirements-dev.txt $(DEPS)
	$(call EDITABLE,$(VENV))
	touch $@

# generated/ ships as onnxdata.generated (pyproject's package-dir). Python finds it
# through the editable install; mypy reads this link instead (pyproject's mypy_path).
$(TYPING_TREE):
	mkdir -p $(dir $@)
	ln -sfn ../../../generated $@

$(VENV_OLD)/.ok: pyproject.toml tools/requirements-old.txt $(WHEEL)
	$(PYTHON) -m venv $(VENV_OLD)
	$(VENV_OLD)/bin/pip install -q -r tools/requirements-old.txt $(DEPS)
	$(call EDITABLE,$(VENV_OLD))
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
	rm -rf $(VENV) $(VENV_OLD) $(VENV_GEN) $(VENV_PLUGIN) .venv-onnx-* .venv-py3.* build \
	  *.egg-info
