#!/usr/bin/env bash
# Two-player games (docs/games.md), on 2 worker
# processes, evaluations every EVAL steps (200 games per opponent, half
# moving first, the agent's most probable action):
#  - TicTacToe for TTT_STEPS steps (about 5 minutes here), ConnectFour for
#    C4_STEPS steps (100M: about 19 minutes with the mix here; pure
#    self-play is about half as fast);
#  - each with train_a3c's defaults (pure self-play: the latest policy or a
#    snapshot) and with the opponent mix (a share of the training games
#    against the fixed opponents, --env-param *_opponent_ratio) and a
#    larger entropy bonus;
#  - the final agent then plays 1000 games against every opponent (--demo).
# -> docs/games/<game>-<setting>.tsv (step, seconds, win/draw/loss rate per
#    opponent, ELO), <game>-<setting>-win.svg and -elo.svg (against
#    steps), <game>-<setting>-final.txt (the command, its time and the
#    1000-game table).
#
# Usage: scripts/experiments/games_experiments.sh [SEED]   (after a Release build)
#        GAMES="ConnectFour" SETTINGS="mix" C4_STEPS=30000000 \
#          scripts/experiments/games_experiments.sh     (one game and setting)
set -euo pipefail
cd "$(dirname "$0")/../.."
seed=${1:-0}
bin=build/apps/train_a3c
[ -x "$bin" ] || { echo "games_experiments: build $bin first" >&2; exit 1; }
docs=docs/games
mkdir -p "$docs"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
TTT_STEPS=${TTT_STEPS:-15000000}
C4_STEPS=${C4_STEPS:-100000000}
EVAL=${EVAL:-1000000}
# The published tables were made with the learner's side trained (before
# --train-sides both became the default); TRAIN_SIDES=both for the new one.
TRAIN_SIDES=${TRAIN_SIDES:-learner}
games=${GAMES:-"TicTacToe ConnectFour"}
settings=${SETTINGS:-"defaults mix"}
# The opponent mix per game: TicTacToe trains partly against random and the
# perfect minimax; Connect Four against random and mostly greedy (minimax:4
# beat the agent in nearly every training game, which taught it little).
MIX_TicTacToe=(--env-param random_opponent_ratio=0.3
               --env-param minimax_opponent_ratio=0.2 --beta 0.03 --lr-decay)
MIX_ConnectFour=(--env-param random_opponent_ratio=0.2
                 --env-param greedy_opponent_ratio=0.5 --beta 0.03 --lr-decay)

# The curve of a run: step, seconds, then the game's columns (win_/draw_/
# loss_ per opponent and elo), from scores.txt.
curve() {  # curve RUN_FOLDER
  awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; ++i) if ($i ~ /^(win|draw|loss)_/ || $i == "elo") keep[++n] = i }
    { line = $1 "\t" $3; for (j = 1; j <= n; ++j) line = line "\t" $keep[j]; print line }' \
    "$1/scores.txt"
}

# An SVG of columns matching REGEX against the step, y in [LO, HI] (both
# "auto": the columns' own range).
plot() {  # plot TSV REGEX LO HI TITLE > SVG
  awk -F'\t' -v re="$2" -v lo="$3" -v hi="$4" -v title="$5" '
    NR == 1 { for (i = 3; i <= NF; ++i) if ($i ~ re) { col[++n] = i; name[n] = $i }; next }
    { ++rows; x[rows] = $1; if ($1 > xmax) xmax = $1
      for (j = 1; j <= n; ++j) {
        y[j, rows] = $col[j]
        if (ymin == "" || $col[j] < ymin) ymin = $col[j]
        if (ymax == "" || $col[j] > ymax) ymax = $col[j]
      } }
    END {
      if (lo == "auto") { lo = ymin; hi = (ymax > ymin ? ymax : ymin + 1) }
      W = 640; H = 360; L = 60; R = 160; T = 30; B = 40
      printf "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" font-size=\"12\">\n", W, H
      printf "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n<text x=\"%d\" y=\"18\">%s</text>\n", L, title
      printf "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n", L, H - B, W - R, H - B
      printf "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n", L, T, L, H - B
      printf "<text x=\"%d\" y=\"%d\">%g</text><text x=\"%d\" y=\"%d\">%g</text>\n", 5, H - B, lo, 5, T + 4, hi
      printf "<text x=\"%d\" y=\"%d\">steps (max %d)</text>\n", L, H - 10, xmax
      split("#1f77b4 #ff7f0e #2ca02c #d62728 #9467bd #8c564b #e377c2 #7f7f7f #bcbd22 #17becf", color, " ")
      for (j = 1; j <= n; ++j) {
        pts = ""
        for (r = 1; r <= rows; ++r) {
          px = L + (W - L - R) * (xmax > 0 ? x[r] / xmax : 0)
          v = (y[j, r] - lo) / (hi - lo); if (v < 0) v = 0; if (v > 1) v = 1
          pts = pts sprintf("%.1f,%.1f ", px, H - B - (H - T - B) * v)
        }
        printf "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"%s\"/>\n", color[(j - 1) % 10 + 1], pts
        printf "<text x=\"%d\" y=\"%d\" fill=\"%s\">%s</text>\n", W - R + 8, T + 16 * j, color[(j - 1) % 10 + 1], name[j]
      }
      print "</svg>"
    }' "$1"
}

for game in $games; do
  steps=$TTT_STEPS
  [ "$game" = ConnectFour ] && steps=$C4_STEPS
  for setting in $settings; do
    extra=()
    if [ "$setting" = mix ]; then
      mix="MIX_$game[@]"
      extra=("${!mix}")
    fi
    out="$work/$game-$setting"
    echo "games_experiments: $game $setting, $steps steps" >&2
    start=$(date +%s.%N)
    "$bin" --env "$game" --processes 2 --steps "$steps" --seed "$seed" \
      --eval-interval "$EVAL" --eval-n-runs 200 --act-deterministically \
      --train-sides "$TRAIN_SIDES" \
      "${extra[@]}" --outdir "$out" --quiet > "$work/log" 2>&1 ||
      { cat "$work/log" >&2; exit 1; }
    end=$(date +%s.%N)
    run=$(ls -d "$out"/*/)
    tsv="$docs/$game-$setting.tsv"
    { printf "step\tseconds"; head -1 "$run/scores.txt" | tr '\t' '\n' |
        grep -E '^(win|draw|loss)_|^elo$' | sed 's/^/\t/' | tr -d '\n'; echo; } > "$tsv"
    curve "$run" | tail -n +2 >> "$tsv"
    plot "$tsv" '^win_' 0 1 "$game, $setting: win rate per opponent" > "$docs/$game-$setting-win.svg"
    plot "$tsv" '^elo$' auto auto "$game, $setting: ELO of the learner against its snapshots" > "$docs/$game-$setting-elo.svg"
    final="$docs/$game-$setting-final.txt"
    {
      printf "%s, %s: %s steps in %.0f s (seed %s); %s\n" "$game" "$setting" "$steps" \
        "$(echo "$end - $start" | bc)" "$seed" "$bin --env $game --processes 2 --steps $steps --seed $seed ${extra[*]:-}"
      "$bin" --env "$game" --demo --load "$run/${steps}_finish" --eval-n-runs 1000 \
        --act-deterministically --seed "$seed"
    } > "$final"
    cat "$final"
  done
done
