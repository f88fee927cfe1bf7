#!/usr/bin/env bash
# The library as an outside project uses it: install BUILD_DIR into a fresh
# prefix, configure and build examples/custom_agent and examples/custom_env
# (each its own CMake project)
# against that prefix only, train with 2 processes and check the run folder.
# Usage: install_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
source=$(cd "$2" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "install_test: FAILED: $*" >&2; exit 1; }

prefix=$work/prefix
# The examples compile through ccache when it is there, with paths hashed
# relative to this run's folder, so that a second run of the test hits (the
# folder's name changes every run). What is compiled is the same.
# (Only when its cache folder can be written: a sandboxed HOME compiles
# without it.)
launcher=()
cache_dir=$(ccache -k cache_dir 2> /dev/null || true)
if [ -n "$cache_dir" ] && mkdir -p "$cache_dir" 2> /dev/null && [ -w "$cache_dir" ]; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR=$work CCACHE_NOHASHDIR=1
fi
cmake --install "$build" --prefix "$prefix" > "$work/install.log" ||
  { cat "$work/install.log"; fail "cmake --install"; }
for f in lib/cmake/asyncrl/asyncrlConfig.cmake \
         lib/cmake/asyncrl/asyncrlConfigVersion.cmake \
         lib/cmake/asyncrl/asyncrlTargets.cmake \
         include/asyncrl/experiments/run_trainer.h \
         include/asyncrl/experiments/train_agent_async.h \
         include/asyncrl/agents/agent.h \
         include/asyncrl/proto/checkpoint.pb.h \
         include/asyncrl/misc/build_info.h; do
  [ -f "$prefix/$f" ] || fail "$f was not installed"
done
# The public header set is closed (every project header an installed one
# includes is installed) and leaves the library's own headers out.
inc=$prefix/include
missing=$(grep -rhoE '^#include [<"]asyncrl/[^">]+' "$inc/asyncrl" |
  sed -E 's/^#include [<"]//' | sort -u |
  while read -r h; do [ -f "$inc/$h" ] || echo "$h"; done)
[ -z "$missing" ] || fail "installed headers include headers that were not installed: $missing"
for internal in experiments/hosts/transport.h experiments/flag_sources.h \
                experiments/train_loop.h experiments/hosts/host_coordinator.h \
                misc/platform/futex.h agents/dense_path.h; do
  [ ! -e "$inc/asyncrl/$internal" ] || fail "internal header $internal was installed"
done
# Nothing installed may point back into the source or build tree.
if grep -rlF -e "$source/" -e "$build/" "$prefix/lib/cmake" "$prefix/include"; then
  fail "installed files refer to the source or build tree (listed above)"
fi

# train_a3c and the Python package (when this build has it), found under the
# prefix as a user's Python finds it, naming the installed train_a3c.
[ -x "$prefix/bin/train_a3c" ] || fail "bin/train_a3c was not installed"
if [ -f "$build/python/asyncrl/__init__.py" ]; then
  pydir=$(ls -d "$prefix"/lib/python3*/dist-packages | head -n 1)
  [ -f "$pydir/asyncrl/__init__.py" ] || fail "the Python package was not installed"
  (cd "$work" && PYTHONPATH="$pydir" /usr/bin/python3 -c '
import sys, asyncrl
assert asyncrl.__file__.startswith(sys.argv[1]), asyncrl.__file__
assert asyncrl.TRAIN_A3C == sys.argv[2], asyncrl.TRAIN_A3C
env = asyncrl.make_vec("CartPole-v1", 2)
env.reset(seed=0)
result = asyncrl.train(["--version"])
assert result.returncode == 0 and result.output.startswith("train_a3c "), result
' "$pydir" "$prefix/bin/train_a3c") || fail "the installed Python package"
fi

# The example as a user would build it: a copy outside our tree, only the
# prefix on CMAKE_PREFIX_PATH.
cp -r "$source/examples/custom_agent" "$work/example"
cmake -S "$work/example" -B "$work/example-build" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_EXPORT_COMPILE_COMMANDS=ON "${launcher[@]}" > "$work/configure.log" 2>&1 ||
  { cat "$work/configure.log"; fail "configuring the example"; }
cmake --build "$work/example-build" > "$work/build.log" 2>&1 ||
  { cat "$work/build.log"; fail "building the example"; }
if grep -F -e "$source/src" -e "$build/" "$work/example-build/compile_commands.json"; then
  fail "the example was compiled with include paths into our tree"
fi

out=$work/out
"$work/example-build/hill_climbing" --env CartPole-v0 --processes 2 \
  --noise 0.3 --steps 20000 --eval-interval 5000 --eval-n-runs 3 --outdir "$out" \
  --quiet > "$work/run.log" 2>&1 ||
  { cat "$work/run.log"; fail "training with the example (status $?)"; }
run=$(sed -n 's/^results in //p' "$work/run.log" | head -n 1)
[ -d "$run" ] || { cat "$work/run.log"; fail "no run folder in the output"; }
header=$(head -n 1 "$run/scores.txt")
expected=$(printf 'steps\tepisodes\telapsed\tmean\tmedian\tstdev\tmax\tmin\tbest_return\timprovements\tepisodes_seen\tnoise\ttrain_mean')
[ "$header" = "$expected" ] || fail "scores.txt header is '$header', expected '$expected'"
rows=$(($(wc -l < "$run/scores.txt") - 1))
[ "$rows" -ge 3 ] || fail "scores.txt has $rows evaluations, expected at least 3 (every 5000 of 20000 steps)"
for f in best/checkpoint.pb 20000_finish/checkpoint.pb args.json command.txt; do
  [ -f "$run/$f" ] || fail "$run/$f is missing"
done
grep -q '"processes": "2"' "$run/args.json" || fail "args.json lacks processes 2"
grep -q '"noise": "0.3"' "$run/args.json" || fail "args.json lacks the program's own flag noise 0.3"
grep -q "finished at step 20000" "$work/run.log" || fail "no 'finished at step 20000' line"

# The example's trainer extension: its columns after the agent's statistics,
# filled at every evaluation (the best training return, in scaled rewards,
# is positive on CartPole; the episodes it measured never decrease).
out2=$work/out2
"$work/example-build/best_return" --env CartPole-v1 --processes 2 \
  --steps 20000 --eval-interval 5000 --eval-n-runs 2 --outdir "$out2" \
  --quiet > "$work/run2.log" 2>&1 ||
  { cat "$work/run2.log"; fail "training with the extension example (status $?)"; }
run2=$(sed -n 's/^results in //p' "$work/run2.log" | head -n 1)
[ -d "$run2" ] || { cat "$work/run2.log"; fail "no run folder in the extension example's output"; }
header2=$(head -n 1 "$run2/scores.txt")
case "$header2" in
  *$'\tbest_train_return\ttrain_episodes_measured') ;;
  *) fail "scores.txt header '$header2' does not end with the extension's columns" ;;
esac
awk -F'\t' 'NR > 1 { if ($(NF-1) <= 0 || $NF < prev) bad = 1; prev = $NF; n++ }
             END { exit (bad || n < 3) }' "$run2/scores.txt" ||
  { cat "$run2/scores.txt"; fail "the extension's columns are not filled as its hooks would"; }
# examples/custom_env as a user would build it: their own environment,
# registered by name, trained and played with the installed library.
cp -r "$source/examples/custom_env" "$work/env-example"
cmake -S "$work/env-example" -B "$work/env-example-build" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" "${launcher[@]}" \
  > "$work/env-configure.log" 2>&1 ||
  { cat "$work/env-configure.log"; fail "configuring the environment example"; }
cmake --build "$work/env-example-build" > "$work/env-build.log" 2>&1 ||
  { cat "$work/env-build.log"; fail "building the environment example"; }
"$work/env-example-build/corridor" --env Corridor --processes 2 \
  --steps 4000 --eval-interval 2000 --eval-n-runs 2 --outdir "$work/out3" \
  > "$work/run3.log" 2>&1 ||
  { cat "$work/run3.log"; fail "training with the environment example (status $?)"; }
run3=$(sed -n 's/^results in //p' "$work/run3.log" | head -n 1)
[ -f "$run3/4000_finish/checkpoint.pb" ] ||
  { cat "$work/run3.log"; fail "the environment example saved no 4000_finish"; }
grep -q '"env": "Corridor"' "$run3/args.json" || fail "args.json lacks env Corridor"
"$work/env-example-build/corridor" --demo --load "$run3/4000_finish" \
  --eval-n-runs 1 > "$work/demo3.log" 2>&1 ||
  { cat "$work/demo3.log"; fail "--demo with the environment example"; }
# Its Python module, where the build has the Python package: the installed
# asyncrl's make_vec steps Corridor after `import corridor_envs`.
if compgen -G "$build/python/asyncrl/_native*.so" > /dev/null; then
  compgen -G "$work/env-example-build/corridor_envs*.so" > /dev/null ||
    { cat "$work/env-build.log"; fail "the environment example built no corridor_envs module"; }
  package=$(compgen -G "$prefix/lib/python3*/dist-packages" | head -n 1)
  PYTHONPATH="$package:$work/env-example-build" /usr/bin/python3 -c '
import corridor_envs, asyncrl
env = asyncrl.make_vec("Corridor", num_envs=3)
obs, _ = env.reset(seed=0)
assert obs.shape == (3, 2), obs.shape
assert asyncrl.__file__.startswith("'"$prefix"'"), asyncrl.__file__
print("make_vec(Corridor):", obs.shape)
' > "$work/module3.log" 2>&1 ||
    { cat "$work/module3.log"; fail "asyncrl.make_vec(\"Corridor\") after import corridor_envs"; }
fi
echo "install_test: 3 passed, 0 failed"
