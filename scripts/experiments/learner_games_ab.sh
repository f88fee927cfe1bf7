#!/usr/bin/env bash
# The learner beside the workers (--learner, docs/learner.md) against
# Hogwild training on a two-player game, on one machine and the same wall
# time: each run trains for SECONDS (--train-seconds), with 2 processes
# (Hogwild: 2 learning workers; --learner: 1 worker and the learner), each
# mode's own flags (HOGWILD and LEARNER, without --env: the script gives
# the game; --learner is added to the latter).
# The final agent (<t>_finish/) then plays GAMES games against every
# evaluation opponent, half moving first, with its most probable move
# (--demo); Connect Four's demo adds the solver's judge (the share of 200
# positions where its move keeps the position's value). Runs are kept under
# DIR/<game>/<mode>/seed<S>/ (a run already there is not run again); the
# table goes to DIR/<game>-<SECONDS>s.tsv: steps reached, then each
# opponent's win/draw/loss rate, then the judge.
#
# Usage: HOGWILD="flags" LEARNER="flags" \
#          scripts/experiments/learner_games_ab.sh DIR GAME SECONDS "SEEDS"
#   HOGWILD="--steps 10000000000 --act-deterministically" LEARNER="$HOGWILD" \
#     scripts/experiments/learner_games_ab.sh docs/learner TicTacToe 60 "11 12 13 14 15"
# Environment: PROCESSES (2), GAMES (1000), MODES ("hogwild learner"; one
# of them to run only that mode).
set -euo pipefail
cd "$(dirname "$0")/../.."
usage="usage: HOGWILD=flags LEARNER=flags scripts/experiments/learner_games_ab.sh DIR GAME SECONDS SEEDS"
dir=${1:?$usage}
game=${2:?$usage}
seconds=${3:?$usage}
seeds=${4:?$usage}
read -r -a hogwild_flags <<< "${HOGWILD:?$usage}"
read -r -a learner_flags <<< "${LEARNER:?$usage}"
bin=build/apps/train_a3c
[ -x "$bin" ] || { echo "learner_games_ab: build $bin first" >&2; exit 1; }
processes=${PROCESSES:-2}
games=${GAMES:-1000}
modes=${MODES:-"hogwild learner"}
tsv=$dir/$game-${seconds}s.tsv
mkdir -p "$dir"

{
  echo "# HOGWILD=\"${HOGWILD}\" LEARNER=\"${LEARNER}\" scripts/experiments/learner_games_ab.sh $dir $game $seconds \"$seeds\""
  echo "# $(date -u +%Y-%m-%d), $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p' | head -1) (family $(sed -n 's/^cpu family\t*: //p' /proc/cpuinfo | head -1), model $(sed -n 's/^model\t*: //p' /proc/cpuinfo | head -1))"
} > "$tsv"
header=0
for seed in $seeds; do
  for mode in $modes; do
    out=$dir/$game/$mode/seed$seed
    flags=("${hogwild_flags[@]}")
    [ "$mode" = learner ] && flags=(--learner "${learner_flags[@]}")
    if ! ls -d "$out"/*/*_finish > /dev/null 2>&1; then
      rm -rf "$out"
      mkdir -p "$out"
      "$bin" --env "$game" --processes "$processes" --seed "$seed" \
        --train-seconds "$seconds" --outdir "$out" --quiet "${flags[@]}" \
        > "$out.log" 2>&1
    fi
    finish=$(ls -d "$out"/*/*_finish | head -1)
    step=$(basename "$finish" _finish)
    if [ ! -s "$out.demo" ]; then
      "$bin" --env "$game" --demo --load "$finish" --eval-n-runs "$games" \
        "${flags[@]}" > "$out.demo" 2>&1
    fi
    # The demo's table: "opponent games first second w/d/l", then the judge.
    if [ "$header" = 0 ]; then
      printf "mode\tseed\tsteps" >> "$tsv"
      awk 'NR > 1 && $1 != "judge:" { printf "\twin_%s\tdraw_%s\tloss_%s", $1, $1, $1 }
           $1 == "judge:" { printf "\tjudge" }' "$out.demo" >> "$tsv"
      printf "\n" >> "$tsv"
      header=1
    fi
    printf "%s\t%s\t%s" "$mode" "$seed" "$step" >> "$tsv"
    awk 'NR > 1 && $1 != "judge:" { split($5, r, "/"); printf "\t%s\t%s\t%s", r[1], r[2], r[3] }
         $1 == "judge:" { printf "\t%s", $2 }' "$out.demo" >> "$tsv"
    printf "\n" >> "$tsv"
    tail -1 "$tsv"
  done
done
echo "learner_games_ab: $tsv"
