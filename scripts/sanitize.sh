#!/usr/bin/env bash
# Builds the tests with AddressSanitizer + UndefinedBehaviorSanitizer
# (LeakSanitizer on; CMake preset "asan", folder build-asan, -Og -g1: a
# third of -O2 -g's build time, line numbers kept) and runs the
# suite under them, one process per test suite (scripts/gtest_suites.sh).
# The fixed-seed learning test is skipped here (3 minutes under ASan; the
# Release run covers it), and so are the on-demand soak test, the install
# test (it builds an outside project without the sanitizer) and the Python
# package's test (not built here). `ctest --preset asan` runs the same
# tests in the same grouping (cmake/gtest_shards.cmake), with the learning
# test included.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --preset asan > /dev/null
cmake --build build-asan --target asyncrl_tests asyncrl_numeric_tests train_a3c \
  custom_agent_example
# As the "asan" test preset sets them (CMakePresets.json), plus what
# tests/CMakeLists.txt gives the tests.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp:print_suppressions=0
export ASYNCRL_BLAS_KERNEL=keep
# One process per test suite (large ones in shards of about 8 tests), not
# per test (scripts/gtest_suites.sh says why); from the tests' build
# folder, as ctest runs them.
root=$PWD
cd build-asan/tests
status=0
"$root/scripts/gtest_suites.sh" ./asyncrl_tests 2 900 '*LearnsCartPole*' ||
  status=1
"$root/scripts/gtest_suites.sh" ./asyncrl_numeric_tests 2 900 || status=1
exit $status
