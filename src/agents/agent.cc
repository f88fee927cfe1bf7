#include "asyncrl/agents/agent.h"

#include <stdexcept>

#include "asyncrl/misc/checkpoint.h"

namespace asyncrl {

void Agent::Save(const std::string& dir) const {
  proto::Checkpoint checkpoint;
  checkpoint.set_agent_type(Type());
  SaveTo(&checkpoint);
  SaveCheckpointDir(checkpoint, dir);
}

void Agent::Load(const std::string& dir) {
  const proto::Checkpoint checkpoint = LoadCheckpointDir(dir);
  if (checkpoint.agent_type() != Type()) {
    throw std::runtime_error("checkpoint " + dir + ": holds a '" +
                             checkpoint.agent_type() + "' agent, not '" +
                             Type() + "'");
  }
  LoadFrom(checkpoint);
}

}  // namespace asyncrl
