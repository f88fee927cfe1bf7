// Your own C++ environment, trained by name: Corridor (corridor_env.cc)
// implements asyncrl's Env interface, main() registers it with the registry
// under "Corridor" (one call, before RunTrainer), and then every flag of
// train_a3c works with --env Corridor: training, --resume, --demo --load,
// --export, --env-param.
//
//   build-example/corridor --env Corridor --processes 2 --steps 200000
//       --successful-score 0.9   (one command)
//
// corridor_module.cc makes the same environment a Python module's
// (asyncrl.make_vec("Corridor") after `import corridor_envs`).
#include "corridor.h"

#include <asyncrl/experiments/run_trainer.h>

int main(int argc, char** argv) {
  // Registered before RunTrainer, so the parent and every worker it forks
  // find it.
  RegisterCorridor();
  asyncrl::TrainerPlugins plugins;
  plugins.program = "corridor";
  return asyncrl::RunTrainer(argc, argv, plugins);
}
