#!/usr/bin/env bash
# Behaviour unchanged? Runs the same six seeded single-process trainings
# with two train_a3c binaries (fc-softmax fast path, --no-fast-path,
# minatar-conv, an LSTM arch, a curriculum that advances twice, TicTacToe
# self-play) and compares scores.txt without its elapsed column and every
# checkpoint decoded without its time and revision fields.
# Usage: scripts/experiments/ab_behaviour.sh OLD_TRAIN_A3C NEW_TRAIN_A3C
# AB_NEW_FLAGS="flag ...": flags only the new binary has, left out of the
# checkpoints' recorded options (a new flag at its default is recorded).
# Prints IDENTICAL, or the differences and exits 1.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 OLD_TRAIN_A3C NEW_TRAIN_A3C" >&2; exit 2; }
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/curriculum.yaml" <<'YAML'
environment_parameters:
  length:
    sampler_type: uniform
    sampler_parameters: {min_value: 0.25, max_value: 1.0}
  force_mag:
    curriculum:
      - name: strong
        completion_criteria: {measure: progress, threshold: 0.3, require_reset: true}
        value: 20
      - name: mid
        completion_criteria: {measure: reward, threshold: 30, min_lesson_length: 5}
        value: 15
      - name: default
        value: 10
YAML
runs() {  # BIN: the six runs into $work/out (the same path for both binaries)
  local bin=$1 common="--processes 1 --seed 3 --quiet --checkpoint-interval 5000"
  rm -rf "$work/out"
  "$bin" $common --outdir "$work/out/fast" --env CartPole-v1 --steps 20000 --eval-interval 5000
  "$bin" $common --outdir "$work/out/nofast" --env CartPole-v1 --steps 20000 --eval-interval 5000 --no-fast-path
  "$bin" $common --outdir "$work/out/conv" --env MinAtar/Breakout --arch minatar-conv --envs-per-process 4 --steps 12000 --eval-interval 4000 --eval-n-runs 3
  "$bin" $common --outdir "$work/out/lstm" --env CartPole-v1 --arch fc-softmax-lstm --envs-per-process 2 --steps 6000 --eval-interval 3000
  "$bin" $common --outdir "$work/out/curriculum" --env CartPole-v1 --curriculum "$work/curriculum.yaml" --steps 20000 --eval-interval 5000
  "$bin" $common --outdir "$work/out/selfplay" --env TicTacToe --steps 20000 --snapshot-interval 2000 --eval-interval 5000 --eval-n-runs 20
}
without_new_flags() {  # drops the recorded options named in AB_NEW_FLAGS
  awk -v flags=" ${AB_NEW_FLAGS:-} " '
    /^  config \{$/ { held = $0; next }
    held != "" {
      key = $2; gsub(/"/, "", key)
      if (index(flags, " " key " ")) { skip = 1 } else { print held; print }
      held = ""; next
    }
    skip { if ($0 ~ /^  \}$/) skip = 0; next }
    { print }'
}
digest() {  # the runs' scores and decoded checkpoints
  for run in $(ls -d "$work"/out/*/ | sort); do
    local dir; dir=$(ls -d "$run"*/ | head -n 1)
    echo "== $(basename "$run")"
    cut -f1,2,4- "$dir/scores.txt"
    for c in $(ls -d "$dir"*/ | sort); do
      [ -f "$c/checkpoint.pb" ] || continue
      echo "-- $(basename "$c") $(tail -c +25 "$c/checkpoint.pb" |
        protoc --decode=asyncrl.proto.Checkpoint -I "$root/proto" \
          "$root/proto/checkpoint.proto" |
        grep -v 'created_unix_ms\|build_revision\|elapsed_seconds' |
        without_new_flags | md5sum)"
    done
  done
}
runs "$1" > /dev/null; digest > "$work/old.txt"
runs "$2" > /dev/null; digest > "$work/new.txt"
if diff "$work/old.txt" "$work/new.txt"; then
  echo "IDENTICAL ($(grep -c '^-- ' "$work/new.txt") checkpoints, $(grep -c '^== ' "$work/new.txt") runs)"
else
  exit 1
fi
