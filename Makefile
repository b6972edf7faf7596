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
	check-gen bench fuzz fuzz-ci fuzz-regress clean test-pure stage-table

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
# other runtimes two at a time (2 cores), and the main suite last, then the wall time of
# each stage (STAGES; the table is printed when a stage fails too, and make test fails).
test: | build
	@rm -f $(STAGES) && date +%s%N > $(STAGES).start
	@rc=0; \
	{ $(MAKE) stage-browser && \
	  $(MAKE) -j$(JOBS) stage-venvs && \
	  $(MAKE) stage-check-gen stage-lint stage-fuzz-regress && \
	  $(MAKE) -j2 --output-sync=target stage-fuzz-ci stage-test-old stage-test-onnx-versions \
	    stage-test-pythons stage-test-pure && \
	  $(MAKE) stage-test-new; } || rc=$$?; \
	$(MAKE) --no-print-directory stage-table; exit $$rc

# make test's stages: stage-T makes T and appends "T start_ns seconds status" to STAGES;
# the loops of test-onnx-versions and test-pythons add a line per venv when STAGE_LOG is
# set (make test sets it). stage-table prints them in the order they started, each venv
# under its stage.
STAGES := build/stage-times.txt
STAGE_LOG ?=
# $(call record,NAME,START_NS,STATUS,FILE), in a recipe's shell: append one line to FILE.
record = echo "$(1) $(2) $$(( ($$(date +%s%N) - $(2)) / 1000000000 )) $(3)" >> "$(4)"
# ... to STAGE_LOG, when it is set.
log_stage = [ -z "$(STAGE_LOG)" ] || $(call record,$(1),$(2),$(3),$(STAGE_LOG))

stage-%: | build
	@s=$$(date +%s%N); rc=0; \
	$(MAKE) --no-print-directory $* STAGE_LOG=$(abspath $(STAGES)) || rc=$$?; \
	$(call record,$*,$$s,$$rc,$(STAGES)); exit $$rc

stage-table:
	@echo; echo "make test, stage by stage (wall time; fuzz-ci to test-pure run two at a time):"
	@sort -s -k2,2n $(STAGES) | awk ' \
	  function row(name, t, rc) { printf "  %-30s %5d s  %3d:%02d  %s\n", name, t, t / 60, \
	    t % 60, rc == 0 ? "ok" : "FAILED (exit " rc ")" } \
	  { name[NR] = $$1; t[NR] = $$3; rc[NR] = $$4 } \
	  END { for (i = 1; i <= NR; i++) if (name[i] !~ /\//) { row(name[i], t[i], rc[i]); \
	    for (j = 1; j <= NR; j++) if (index(name[j], name[i] "/") == 1) \
	      row("  " name[j], t[j], rc[j]) } }'
	@t=$$(( ($$(date +%s%N) - $$(cat $(STAGES).start)) / 1000000000 )); \
	  printf "  %-30s %5d s  %3d:%02d\n" "make test, in all" $$t $$((t / 60)) $$((t % 60))

venvs: $(ALL_VENVS)

test-new: $(VENV)/.ok $(VENV_GEN)/.ok $(VENV_PLUGIN)/.ok browser
	ONNXDATA_REQUIRE_GEN=1 ONNXDATA_INSTALL_TESTS=1 $(PY) -m pytest -q -p no:cacheprovider

# The page test's browser: Debian's chromium, driven by playwright (tools/requirements-dev.txt)
# with executable_path, so `playwright install` never downloads one. Installed only when
# missing and when root; elsewhere tests/page/test_page.py's browser tests skip and say why.
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
	  echo "== onnx $$v"; s=$$(date +%s%N); rc=0; \
	  .venv-onnx-$$v/bin/python -m pytest -q -p no:cacheprovider tests/package/test_coexist.py || rc=$$?; \
	  $(call log_stage,test-onnx-versions/$$v,$$s,$$rc); [ $$rc = 0 ] || exit 1; \
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
	    echo "== python $$v"; s=$$(date +%s%N); rc=0; \
	    .venv-py$$v/bin/python -m pytest -q -p no:cacheprovider || rc=$$?; \
	    $(call log_stage,test-pythons/$$v,$$s,$$rc); [ $$rc = 0 ] || exit 1; \
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
$(WHEEL): pyproject.toml setup.py onnxdata/wire/_varints.pyx onnxdata/wire/_walk.pyx \
		onnxdata/wire/_layouts.pyx onnxdata/wire/_wire.pxd | build
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
