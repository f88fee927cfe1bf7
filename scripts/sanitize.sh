#!/usr/bin/env bash
# Builds the tests with AddressSanitizer + UndefinedBehaviorSanitizer
# (LeakSanitizer on; CMake preset "asan", folder build-asan, -Og -g1: a
# third of -O2 -g's build time, line numbers kept) and runs the
# suite under them. The fixed-seed learning test is skipped here (3 minutes
# under ASan; the Release run covers it), and so are the on-demand soak test
# and the install test (it builds an outside project without the sanitizer).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --preset asan > /dev/null
cmake --build build-asan --target asyncrl_tests asyncrl_numeric_tests train_a3c \
  custom_agent_example
ctest --preset asan --label-exclude 'soak|install' --exclude-regex LearnsCartPole
