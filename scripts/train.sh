#!/usr/bin/env bash
# Installs what is missing, builds train_a3c and runs the default training job.
# Extra arguments go to train_a3c (see `build/apps/train_a3c --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build --target train_a3c
exec ./build/apps/train_a3c "$@"
