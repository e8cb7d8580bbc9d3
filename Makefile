# flowpg: continuous aggregation flows for PostgreSQL (PGXS build).
#
#   make            build the extension
#   make install    install it into the PostgreSQL found by PG_CONFIG
#   make demo       install what is missing, build, start a throwaway cluster, run the demo
#   make test       install what is missing, build, run pg_regress + isolation + TAP suites
#   make installcheck   the PGXS way (packagers): regress + isolation against the running
#                   server (flowpg preloaded, test/flowpg.conf settings), then the TAP files;
#                   TEMP_INSTANCE=1: regress + isolation in temporary instances instead;
#                   TAP_TESTS= (empty): without the TAP files
#   make bench      the benchmark (see BENCHMARKS.md)

EXTENSION = flowpg
MODULE_big = flowpg
# The layers of src/, bottom-up (src/base/flowpg.h); every source file in them is built.
SRC_DIRS = src src/base src/functions src/metadata src/planning src/sinks src/batching src/streaming src/lifecycle src/greptime src/worker
OBJS = $(patsubst %.c,%.o,$(sort $(foreach d,$(SRC_DIRS),$(wildcard $(d)/*.c))))
DATA = flowpg--0.1.sql flowpg--0.2.sql flowpg--0.1--0.2.sql flowpg--0.2--0.3.sql
# The current version's whole script, so that a fresh install runs one: 0.2's
# script followed by the update to 0.3 (test/t/036_fresh_install.pl checks
# that it gives the objects an update gives).  Built, not kept, so that the
# two can never drift apart while 0.3 is being made.
DATA_built = flowpg--0.3.sql
# The SQL objects' version the library works with (catalog.h), from the control file.
EXTVERSION := $(shell sed -n "s/^default_version = '\(.*\)'/\1/p" flowpg.control)
# Each folder is on the include path, src/ itself not: "catalog/..." (say) must
# always reach PostgreSQL's headers, never src/catalog/.
PG_CPPFLAGS = $(foreach d,$(filter-out src,$(SRC_DIRS)),-I$(srcdir)/$(d)) -DFLOWPG_VERSION='"$(EXTVERSION)"'

# The regression suites: one file per topic of the user contract.
REGRESS = $(patsubst sql/%.sql,%,$(sort $(wildcard sql/*.sql)))
# The isolation specs: test/isolation/specs/*.spec, expected in test/isolation/expected.
ISOLATION = $(patsubst test/isolation/specs/%.spec,%,$(sort $(wildcard test/isolation/specs/*.spec)))
# As scripts/run-tests.sh runs them: UTF8, C locale, test/flowpg.conf for a
# temporary instance (a running server must have its settings already).
ENCODING = UTF8
NO_LOCALE = 1
REGRESS_OPTS = --temp-config=$(srcdir)/test/flowpg.conf
ISOLATION_OPTS = --inputdir=$(srcdir)/test/isolation --temp-config=$(srcdir)/test/flowpg.conf
# "make installcheck TEMP_INSTANCE=1": regress and isolation in temporary
# instances (PGXS refuses "make check" outside the PostgreSQL tree).
ifdef TEMP_INSTANCE
REGRESS_OPTS += --temp-instance=./tmp_check
ISOLATION_OPTS += --temp-instance=./tmp_check_iso
endif
# The TAP files (test/t/*.pl, PostgreSQL::Test::Cluster: nodes of their own).
TAP_TESTS = 1

# Debian keeps the server's pg_config out of PATH; prefer it when present.
PG_CONFIG ?= $(firstword $(wildcard /usr/lib/postgresql/15/bin/pg_config) pg_config)
PGXS := $(shell $(PG_CONFIG) --pgxs 2>/dev/null)
ifeq ($(PGXS),)
# Nothing to build with yet: only the set-up targets below work.
.DEFAULT_GOAL := all
all:
	@echo "PostgreSQL server development files are missing: run 'make deps' (or 'make test' / 'make demo')." >&2; exit 1
else
include $(PGXS)
endif

# prove runs from the top directory: FlowpgTest.pm is in test/t.  The upgrade
# tests need the earlier releases scripts/run-tests.sh builds from the git
# history (scripts/previous-release.sh): they run only when given them.
PG_PROVE_FLAGS += -I $(srcdir)/test/t
PROVE_TESTS = $(filter-out $(if $(FLOWPG_RELEASE_0_1),,test/t/026_upgrade.pl) \
	$(if $(FLOWPG_PREVIOUS_RELEASE),,test/t/028_upgrade_0_2.pl),$(sort $(wildcard test/t/*.pl)))

# flowload: the load generator and exactness verifier (test/tools), built with
# the extension so that the test suites and make bench find it.
.PHONY: flowload clean-flowload
all: flowload
flowload:
	@$(MAKE) --no-print-directory -C test/tools PG_CONFIG=$(PG_CONFIG)
clean: clean-flowload
clean-flowload:
	@$(MAKE) --no-print-directory -C test/tools clean

flowpg--0.3.sql: flowpg--0.2.sql flowpg--0.2--0.3.sql
	{ echo '-- flowpg 0.3, built by make from flowpg--0.2.sql and flowpg--0.2--0.3.sql: edit those.'; \
	  cat flowpg--0.2.sql; echo; cat flowpg--0.2--0.3.sql; } > $@

# PGXS tracks no header dependencies: rebuild everything when one changes.
$(OBJS): $(foreach d,$(SRC_DIRS),$(wildcard $(d)/*.h)) flowpg.control

.PHONY: deps demo test bench

deps:
	@scripts/install-deps.sh

demo: deps
	@$(MAKE) --no-print-directory all
	@scripts/sudo-if-needed.sh $(MAKE) --no-print-directory install
	@scripts/demo.sh

test: deps
	@$(MAKE) --no-print-directory all
	@scripts/sudo-if-needed.sh $(MAKE) --no-print-directory install
	@scripts/run-tests.sh

bench: deps
	@$(MAKE) --no-print-directory all
	@scripts/sudo-if-needed.sh $(MAKE) --no-print-directory install
	@test/bench/run.sh $(BENCH_ARGS)
