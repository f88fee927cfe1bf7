#!/usr/bin/env bash
# Builds the tests with AddressSanitizer + UndefinedBehaviorSanitizer
# (LeakSanitizer on; CMake preset "asan", folder build-asan) and runs the
# suite under them. The fixed-seed learning test is skipped here (3 minutes
# under ASan; the Release run covers it) and so is the on-demand soak test.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --preset asan > /dev/null
cmake --build build-asan --target asyncrl_tests train_a3c custom_agent_example
ctest --preset asan --label-exclude soak --exclude-regex LearnsCartPole
