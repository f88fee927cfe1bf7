#include "asyncrl/agents/rollout.h"

namespace asyncrl {
namespace {

// from_blob takes a mutable pointer; the tensors made here are only read.
torch::Tensor Rows(const std::vector<float>& data, int64_t rows,
                   int64_t width) {
  return torch::from_blob(const_cast<float*>(data.data()), {rows, width});
}

}  // namespace

int64_t Rollout::AddBootstrap(const float* observation, int64_t obs_size) {
  bootstrap_obs.insert(bootstrap_obs.end(), observation,
                       observation + obs_size);
  return num_bootstrap++;
}

void Rollout::Clear() {
  steps = 0;
  num_bootstrap = 0;
  obs.clear();
  actions.clear();
  cont_actions.clear();
  rewards.clear();
  behaviour_log_probs.clear();
  next.clear();
  bootstrap_obs.clear();
  turn_passes.clear();
}

UnrollInput MakeUnrollInput(const Rollout& rollout, int64_t obs_size) {
  const int64_t n = rollout.rows();
  UnrollInput input;
  input.batch = rollout.batch;
  input.obs = Rows(rollout.obs, n, obs_size);
  if (!rollout.initial_state.empty()) {
    input.initial_state = Rows(
        rollout.initial_state, rollout.batch,
        static_cast<int64_t>(rollout.initial_state.size()) / rollout.batch);
  }
  input.sequence_end.resize(n);
  input.bootstrap_row.resize(rollout.num_bootstrap);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t next = rollout.next[i];
    input.sequence_end[i] = static_cast<uint8_t>(next != Rollout::kContinue);
    if (next >= 0) input.bootstrap_row[next] = i;
  }
  // An empty vector's data() may be null, which from_blob does not take.
  input.bootstrap_obs =
      rollout.num_bootstrap > 0
          ? Rows(rollout.bootstrap_obs, rollout.num_bootstrap, obs_size)
          : torch::empty({0, obs_size});
  return input;
}

}  // namespace asyncrl
