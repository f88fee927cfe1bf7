#include "asyncrl/experiments/shared_region.h"

#include <boost/interprocess/anonymous_shared_memory.hpp>
#include <boost/interprocess/exceptions.hpp>
#include <new>
#include <stdexcept>
#include <string>

namespace asyncrl {
namespace {

constexpr size_t kAlign = 64;

size_t AlignUp(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

size_t ArrayBytes(int64_t count, const char* what) {
  if (count < 0) {
    throw std::invalid_argument(std::string("SharedRegion: ") + what + "=" +
                                std::to_string(count) +
                                " must be non-negative");
  }
  return AlignUp(static_cast<size_t>(count) * sizeof(float));
}

}  // namespace

size_t SharedRegion::BytesFor(int64_t num_params, int64_t num_optimizer_floats,
                              const std::vector<size_t>& extension_bytes,
                              size_t agent_state_bytes) {
  size_t bytes = AlignUp(sizeof(ControlBlock)) +
                 ArrayBytes(num_params, "num_params") +
                 ArrayBytes(num_optimizer_floats, "num_optimizer_floats") +
                 AlignUp(agent_state_bytes);
  for (size_t n : extension_bytes) bytes += AlignUp(n);
  return bytes;
}

SharedRegion::SharedRegion(int64_t num_params, int64_t num_optimizer_floats,
                           const std::vector<size_t>& extension_bytes,
                           size_t agent_state_bytes) {
  const size_t bytes = BytesFor(num_params, num_optimizer_floats,
                                extension_bytes, agent_state_bytes);
  try {
    region_ = boost::interprocess::anonymous_shared_memory(bytes);
  } catch (const boost::interprocess::interprocess_exception& e) {
    throw std::runtime_error("SharedRegion: could not map " +
                             std::to_string(bytes) +
                             " bytes of shared memory: " + e.what());
  }
  auto* base = static_cast<char*>(region_.get_address());
  control_ = new (base) ControlBlock();
  params_ = reinterpret_cast<float*>(base + AlignUp(sizeof(ControlBlock)));
  optimizer_state_ = params_ + ArrayBytes(num_params, "") / sizeof(float);
  char* next = reinterpret_cast<char*>(optimizer_state_) +
               ArrayBytes(num_optimizer_floats, "");
  if (agent_state_bytes > 0) agent_state_ = next;
  next += AlignUp(agent_state_bytes);
  for (size_t n : extension_bytes) {
    extensions_.push_back(n == 0 ? nullptr : next);
    next += AlignUp(n);
  }
  // A fresh anonymous mapping is zero-filled by the kernel.
}

SharedRegion::~SharedRegion() {
  if (control_ != nullptr) control_->~ControlBlock();
}

}  // namespace asyncrl
