// train_a3c: trains an A3C agent with asynchronous worker processes, or with
// --demo evaluates a saved one (`train_a3c --help` lists the flags). Exit
// status: 0 success, 1 a worker failed, 2 invalid flags, 130/143 stopped by
// SIGINT/SIGTERM. The whole program is the library's RunTrainer.
#include "asyncrl/experiments/run_trainer.h"

int main(int argc, char** argv) { return asyncrl::RunTrainer(argc, argv); }
