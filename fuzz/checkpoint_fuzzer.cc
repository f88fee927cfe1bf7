// libFuzzer target: the checkpoint loader on arbitrary file contents. It must
// either return a validated checkpoint or throw std::runtime_error; never
// crash, leak, or allocate more than the file justifies (the 1 MiB size cap
// below and ASan's allocation limit catch that).
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "asyncrl/misc/checkpoint.h"

namespace {

const std::string& Path() {
  static const std::string path =
      "/tmp/asyncrl_checkpoint_fuzz_" + std::to_string(getpid()) + ".pb";
  return path;
}

}  // namespace

// The first byte picks the layer: odd values fuzz the whole file (header,
// length, CRC), even values the payload validation behind the CRC, which
// random mutations of a whole file rarely reach.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool whole_file = (data[0] & 1) != 0;
  ++data;
  --size;
  try {
    asyncrl::proto::Checkpoint c;
    if (whole_file) {
      std::FILE* f = std::fopen(Path().c_str(), "wb");
      if (f == nullptr) return 0;
      std::fwrite(data, 1, size, f);
      std::fclose(f);
      c = asyncrl::LoadCheckpointFile(Path(), /*max_bytes=*/1 << 20);
    } else {
      c = asyncrl::ParseCheckpointPayload(
          std::string(reinterpret_cast<const char*>(data), size), "payload");
    }
    // A checkpoint that loads has tensors whose bytes match their shapes.
    for (const auto& t : c.parameters()) {
      std::vector<int64_t> shape(t.shape().begin(), t.shape().end());
      if (t.dtype() == asyncrl::proto::DTYPE_FLOAT32) {
        std::vector<float> out(t.data().size() / sizeof(float));
        asyncrl::ReadFloatTensor(c.parameters(), t.name(), shape, out.data());
      }
    }
  } catch (const std::runtime_error&) {
  }
  return 0;
}
