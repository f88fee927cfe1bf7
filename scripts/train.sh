#!/usr/bin/env bash
# Installs what is missing, builds train_a3c and runs the default training
# job: A3C on CartPole-v1 with every core until an evaluation mean reaches
# 475 (gym's solved threshold). Extra arguments go to train_a3c
# (see `build/apps/train_a3c --help`); the results folder is printed first.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build --target train_a3c
exec ./build/apps/train_a3c --env CartPole-v1 --successful-score 475 \
  --eval-interval 20000 --steps 5000000 "$@"
