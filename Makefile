# onnxdata: every job a developer or CI runs. Each target sets up what it needs.
PYTHON ?= python3
VENV := .venv
VENV_GEN := .venv-gen
VENV_PLUGIN := .venv-plugin
VENV_OLD := .venv-old
VENV_DOCS := .venv-docs
PY := $(VENV)/bin/python
PLUGIN := $(VENV_PLUGIN)/bin/protoc-gen-mypy
TYPING_TREE := build/typing/onnxdata/generated
EXAMPLE := tests/data/onnx-node/test_loop16_seq_none/test_data_set_0/input_2.pb
# Venvs are made and filled by uv (tools/requirements-uv.txt pins it; it is installed into
# build/uv by pip): it resolves and unpacks in parallel from one cache, where pip took 7 to 10
# minutes for make test's venvs. Each venv installs our dependencies from one wheel built
# first (so they are listed only in pyproject), then onnxdata itself editable; that step
# writes onnxdata.egg-info in the checkout, so it takes a lock. The compiled loops are built
# in place once per Python (EDITABLE, by .venv, .venv-py3.10 and .venv-py3.13); every other
# venv of Python 3.11 uses the same extensions in the checkout (EDITABLE_PURE: no compiler run).
JOBS ?= 4
WHEEL := build/wheel/.ok
DEPS := build/wheel/onnxdata-*.whl
UV := build/uv/bin/uv
# never fetch a Python: every venv uses an interpreter of this machine
export UV_PYTHON_DOWNLOADS := never
# $(call NEW_VENV,DIR,PYTHON): a fresh venv with pip in it (the packaging tests run pip).
NEW_VENV = $(UV) venv -q --clear --seed --python $(2) $(1)
# $(call INSTALL,DIR,ARGS): uv pip install ARGS into the venv DIR, compiled to bytecode as
# pip leaves an install (uv does not by default): without .pyc files every process the
# tests and benches start compiles its imports again (0.5 s a pytest process).
INSTALL = $(UV) pip install -q --compile-bytecode --python $(1)/bin/python $(2)
EDITABLE = flock build/.pip-lock $(call INSTALL,$(1),--no-deps -e .)
EDITABLE_PURE = ONNXDATA_PURE_PYTHON=1 $(EDITABLE)

# Every onnx release line from 1.16 to 1.22; 1.23.2 is in .venv.
ONNX_VERSIONS := 1.16.2 1.17.0 1.18.0 1.19.1 1.20.1 1.21.0 1.22.0
ONNX_VENVS := $(foreach v,$(ONNX_VERSIONS),.venv-onnx-$(v)/.ok)

# The main suite also runs on the oldest and newest Python we support, where pyenv
# has them (3.13 installs the newest numpy, 2.5 at the time of writing).
PYENV_ROOT := $(shell pyenv root 2>/dev/null)
PY310 := $(lastword $(sort $(wildcard $(PYENV_ROOT)/versions/3.10.*/bin/python3.10)))
PY313 := $(lastword $(sort $(wildcard $(PYENV_ROOT)/versions/3.13.*/bin/python3.13)))
PYENV_VENVS := $(if $(PY310),.venv-py3.10/.ok) $(if $(PY313),.venv-py3.13/.ok)

ALL_VENVS := $(VENV)/.ok $(VENV_OLD)/.ok $(VENV_GEN)/.ok $(VENV_PLUGIN)/.ok $(VENV_DOCS)/.ok \
	$(ONNX_VENVS) $(PYENV_VENVS)

.PHONY: run browser test check venvs test-new test-old test-onnx-versions test-pythons lint gen \
	check-gen bench fuzz fuzz-ci fuzz-regress clean test-pure stage-table docs

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

# Everything, from nothing: the browser and the venvs JOBS at a time, then every check and
# suite at once on the 2 cores, each going on when another fails (-k), so one run names
# every failure; then the wall and CPU time of each stage (STAGES; the table is printed when
# a stage fails too, and make test fails). All at once, since two or three at a time left a
# core idle while the last long suite ran alone (17 min 7 s at two, 15 min 32 s at three,
# for about 1,660 CPU seconds); the main suite has 2 workers, as it is the longest.
TEST_STAGES := test-new test-pure test-py3.10 test-old test-py3.13 test-onnx-versions \
	check-gen lint fuzz-regress docs
test: | build
	@rm -f $(STAGES) && date +%s%N > $(STAGES).start
	@rc=0; \
	{ $(MAKE) -j$(JOBS) stage-browser stage-venvs && \
	  $(MAKE) -k -j$(words $(TEST_STAGES)) --output-sync=target \
	    $(addprefix stage-,$(TEST_STAGES)); } || rc=$$?; \
	$(MAKE) --no-print-directory stage-table; exit $$rc

# make test's stages: stage-T makes T and appends "T start_ns seconds status cpu_seconds"
# to STAGES (cpu: user + system time of everything the stage ran, from the shell's `times`;
# it hardly changes with load, where the wall time does); the loop of test-onnx-versions adds
# a line per venv when STAGE_LOG is set (make test sets it). stage-table prints them in the
# order they started, each venv under its stage.
STAGES := build/stage-times.txt
STAGE_LOG ?=
# $(call record,NAME,START_NS,STATUS,FILE[,CPU]), in a recipe's shell: append one line to FILE.
record = echo "$(1) $(2) $$(( ($$(date +%s%N) - $(2)) / 1000000000 )) $(3) $(5)" >> "$(4)"
# ... to STAGE_LOG, when it is set.
log_stage = [ -z "$(STAGE_LOG)" ] || $(call record,$(1),$(2),$(3),$(STAGE_LOG))
# $(call cpu_of,FILE): the CPU seconds in FILE, which holds the output of `times` (run in
# the recipe's own shell: in $$(...) it would time a subshell that ran nothing).
cpu_of = awk 'NR == 2 { for (i = 1; i <= 2; i++) { split($$i, t, "m"); \
	c += t[1] * 60 + t[2] } printf "%d", c }' $(1)

stage-%: | build
	@s=$$(date +%s%N); rc=0; \
	$(MAKE) --no-print-directory $* STAGE_LOG=$(abspath $(STAGES)) || rc=$$?; \
	times > $(STAGES).$*; \
	$(call record,$*,$$s,$$rc,$(STAGES),$$($(call cpu_of,$(STAGES).$*))); exit $$rc

stage-table:
	@echo; echo "make test, stage by stage (wall time; after the venvs, all run at once;"; \
	  echo "cpu: user + system seconds of the stage's processes, on 2 cores):"
	@sort -s -k2,2n $(STAGES) | awk ' \
	  function row(name, t, rc, cpu) { printf "  %-30s %5d s  %3d:%02d  %6s  %s\n", name, t, \
	    t / 60, t % 60, cpu == "" ? "" : cpu " s", rc == 0 ? "ok" : "FAILED (exit " rc ")" } \
	  { name[NR] = $$1; t[NR] = $$3; rc[NR] = $$4; cpu[NR] = $$5 } \
	  END { for (i = 1; i <= NR; i++) if (name[i] !~ /\//) { row(name[i], t[i], rc[i], cpu[i]); \
	    total += cpu[i]; \
	    for (j = 1; j <= NR; j++) if (index(name[j], name[i] "/") == 1) \
	      row("  " name[j], t[j], rc[j], cpu[j]) } \
	    printf "  %-30s %20d s\n", "cpu of every stage", total }'
	@t=$$(( ($$(date +%s%N) - $$(cat $(STAGES).start)) / 1000000000 )); \
	  printf "  %-30s %5d s  %3d:%02d\n" "make test, in all" $$t $$((t / 60)) $$((t % 60))

venvs: $(ALL_VENVS)

# The main suite, everything in it, with the generated code's drift check and the clean-venv
# tests (ONNXDATA_INSTALL_TESTS=1). On 2 workers, as it is the longest suite. The other
# suites leave out the tests marked `builds` (wheel, sdist, venv, mypy): what those check does
# not change with the runtime. --dist loadfile keeps each file on one worker, so the
# packaging tests' module-scoped wheel is built once, not by two workers at once in the
# checkout's build/ (their in-tree builds would race).
NOT_BUILDS := -m "not builds"
test-new: $(VENV)/.ok $(VENV_GEN)/.ok $(VENV_PLUGIN)/.ok $(VENV_DOCS)/.ok browser
	ONNXDATA_REQUIRE_GEN=1 ONNXDATA_INSTALL_TESTS=1 $(PY) -m pytest -q -n 2 --dist loadfile \
	  -p no:cacheprovider

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
	ONNXDATA_PURE_PYTHON=1 $(PY) -m pytest -q -p no:cacheprovider $(NOT_BUILDS)

# The same suite on the oldest protobuf runtime we support; onnx tests skip there.
test-old: $(VENV_OLD)/.ok
	$(VENV_OLD)/bin/python -m pytest -q -p no:cacheprovider $(NOT_BUILDS)

# The coexistence tests against each older onnx, one venv per release.
test-onnx-versions: $(ONNX_VENVS)
	@for v in $(ONNX_VERSIONS); do \
	  echo "== onnx $$v"; s=$$(date +%s%N); rc=0; \
	  .venv-onnx-$$v/bin/python -m pytest -q -p no:cacheprovider tests/package/test_coexist.py || rc=$$?; \
	  $(call log_stage,test-onnx-versions/$$v,$$s,$$rc); [ $$rc = 0 ] || exit 1; \
	done

.venv-onnx-%/.ok: pyproject.toml $(WHEEL) | $(VENV)/.ok
	$(call NEW_VENV,.venv-onnx-$*,$(PYTHON))
	$(call INSTALL,.venv-onnx-$*,"onnx==$*" $(if $(filter 1.16.%,$*),"numpy<2") pytest $(DEPS))
	$(call EDITABLE_PURE,.venv-onnx-$*)
	touch $@

# The main suite on Python 3.10 and 3.13 (newest numpy, protobuf, onnx 1.23.2), where pyenv
# has them; test-pythons runs both.
test-pythons: test-py3.10 test-py3.13
.SECONDEXPANSION:
test-py%: $$(if $$(PY_$$*),.venv-py$$*/.ok)
	@if [ -x .venv-py$*/bin/python ]; then \
	  .venv-py$*/bin/python -m pytest -q -p no:cacheprovider $(NOT_BUILDS); \
	else echo "python $*: skipped, pyenv has no python$* (pyenv root: '$(PYENV_ROOT)')"; fi

# The Python of each, by the version in the venv's name.
PY_3.10 := $(PY310)
PY_3.13 := $(PY313)
.venv-py%/.ok: pyproject.toml tools/requirements-pythons.txt $(WHEEL)
	$(call NEW_VENV,.venv-py$*,$(PY_$*))
	$(call INSTALL,.venv-py$*,-r tools/requirements-pythons.txt $(DEPS))
	$(call EDITABLE,.venv-py$*)
	touch $@

build:
	mkdir -p build

$(UV): tools/requirements-uv.txt | build
	rm -rf build/uv
	$(PYTHON) -m venv build/uv
	build/uv/bin/pip install -q -r tools/requirements-uv.txt

# Our wheel, whose metadata gives every venv the dependencies pyproject lists: pure
# (ONNXDATA_PURE_PYTHON=1: no compiled varint loop), so venvs of any Python install it.
# Every venv depends on it, so a change to the loops rebuilds them (the editable installs
# of .venv, .venv-py3.10 and .venv-py3.13 compile them in place; the others use .venv's).
# Every Cython source and declaration file is a prerequisite: a changed .pxd changes the loops.
CYTHON_SOURCES := $(wildcard onnxdata/*/*.pyx onnxdata/*/*.pxd)
$(WHEEL): pyproject.toml setup.py $(CYTHON_SOURCES) | $(UV)
	rm -rf build/wheel
	ONNXDATA_PURE_PYTHON=1 flock build/.pip-lock $(UV) build -q --wheel -o build/wheel .
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
# to pick some). fuzz-ci is a bounded slice, 8 harnesses x 8 s; make test does not run it,
# since the suite's test_fuzz_harness_runs starts every harness the same way (300 runs each).
# fuzz-regress replays every input in tests/data/fuzz-regressions/ through every harness.
SECONDS ?= 60
FUZZ ?= all
fuzz: $(VENV)/.ok
	$(PY) tests/fuzz/run.py --seconds $(SECONDS) $(FUZZ)

fuzz-ci: $(VENV)/.ok
	$(PY) tests/fuzz/run.py --seconds 8 all

fuzz-regress: $(VENV)/.ok
	$(PY) tests/fuzz/run.py --regress

$(VENV)/.ok: pyproject.toml tools/requirements-dev.txt $(WHEEL) | $(TYPING_TREE)
	$(call NEW_VENV,$(VENV),$(PYTHON))
	$(call INSTALL,$(VENV),-r tools/requirements-dev.txt $(DEPS))
	$(call EDITABLE,$(VENV))
	$(VENV)/bin/python -m compileall -q onnxdata  # (an edited module's is only stale)
	touch $@

# generated/ ships as onnxdata.generated (pyproject's package-dir). Python finds it
# through the editable install; mypy reads this link instead (pyproject's mypy_path).
$(TYPING_TREE):
	mkdir -p $(dir $@)
	ln -sfn ../../../generated $@

$(VENV_OLD)/.ok: pyproject.toml tools/requirements-old.txt $(WHEEL) | $(VENV)/.ok
	$(call NEW_VENV,$(VENV_OLD),$(PYTHON))
	$(call INSTALL,$(VENV_OLD),-r tools/requirements-old.txt $(DEPS))
	$(call EDITABLE_PURE,$(VENV_OLD))
	touch $@

$(VENV_GEN)/.ok: tools/requirements-gen.txt | $(UV)
	$(call NEW_VENV,$(VENV_GEN),$(PYTHON))
	$(call INSTALL,$(VENV_GEN),-r tools/requirements-gen.txt)
	touch $@

# The documentation site (docs/, mkdocs.yml) into site/, warnings as errors: a broken link,
# a reference to a name that is gone or a page left out of the nav fails it. docs/cli/ is
# written from the parser by tools/cli_pages.py (a test fails when it is stale).
docs: $(VENV_DOCS)/.ok
	NO_MKDOCS_2_WARNING=1 $(VENV_DOCS)/bin/mkdocs build --strict --quiet --site-dir site

$(VENV_DOCS)/.ok: pyproject.toml tools/requirements-docs.txt $(WHEEL) | $(UV)
	$(call NEW_VENV,$(VENV_DOCS),$(PYTHON))
	$(call INSTALL,$(VENV_DOCS),-r tools/requirements-docs.txt $(DEPS))
	$(call EDITABLE_PURE,$(VENV_DOCS))
	touch $@

$(VENV_PLUGIN)/.ok: tools/requirements-plugin.txt | $(UV)
	$(call NEW_VENV,$(VENV_PLUGIN),$(PYTHON))
	$(call INSTALL,$(VENV_PLUGIN),-r tools/requirements-plugin.txt)
	touch $@

clean:
	rm -rf $(VENV) $(VENV_OLD) $(VENV_GEN) $(VENV_PLUGIN) $(VENV_DOCS) .venv-onnx-* .venv-py3.* \
	  build site *.egg-info
