#include "asyncrl/misc/tensorboard.h"

#include <unistd.h>

#include <boost/crc.hpp>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <stdexcept>

namespace asyncrl {
namespace {

void PutLe(char* out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out[i] = static_cast<char>(v >> (8 * i));
}

uint64_t GetLe(const unsigned char* in, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(in[i]) << (8 * i);
  return v;
}

}  // namespace

uint32_t Crc32c(const void* data, size_t n) {
  boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true> crc;
  crc.process_bytes(data, n);
  return crc.checksum();
}

uint32_t MaskCrc(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

EventWriter::EventWriter(const std::string& dir) {
  char host[256] = "localhost";
  gethostname(host, sizeof(host) - 1);
  path_ = (std::filesystem::path(dir) /
           ("events.out.tfevents." + std::to_string(std::time(nullptr)) + "." +
            host))
              .string();
  file_ = std::fopen(path_.c_str(), "ab");
  if (file_ == nullptr) {
    throw std::runtime_error("cannot create " + path_ + ": " +
                             std::strerror(errno));
  }
  tensorboard::Event version;
  version.set_wall_time(static_cast<double>(std::time(nullptr)));
  version.set_file_version("brain.Event:2");
  WriteEvent(version);
  Flush();
}

EventWriter::~EventWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

void EventWriter::WriteScalar(const std::string& tag, int64_t step,
                              double value, double wall_time) {
  tensorboard::Event event;
  event.set_wall_time(wall_time);
  event.set_step(step);
  auto* v = event.mutable_summary()->add_value();
  v->set_tag(tag);
  v->set_simple_value(static_cast<float>(value));
  WriteEvent(event);
}

void EventWriter::WriteEvent(const tensorboard::Event& event) {
  const std::string data = event.SerializeAsString();
  char header[12];
  PutLe(header, data.size(), 8);
  PutLe(header + 8, MaskCrc(Crc32c(header, 8)), 4);
  char footer[4];
  PutLe(footer, MaskCrc(Crc32c(data.data(), data.size())), 4);
  std::fwrite(header, 1, sizeof(header), file_);
  std::fwrite(data.data(), 1, data.size(), file_);
  std::fwrite(footer, 1, sizeof(footer), file_);
}

void EventWriter::Flush() { std::fflush(file_); }

std::vector<tensorboard::Event> ReadEventFile(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    throw std::runtime_error("cannot open " + path + ": " +
                             std::strerror(errno));
  }
  std::vector<tensorboard::Event> events;
  unsigned char header[12];
  while (true) {
    const size_t got = std::fread(header, 1, sizeof(header), f);
    if (got == 0) break;
    const std::string where =
        path + ": record " + std::to_string(events.size());
    auto fail = [&](const std::string& what) {
      std::fclose(f);
      throw std::runtime_error(where + ": " + what);
    };
    if (got != sizeof(header)) fail("truncated header");
    const uint64_t length = GetLe(header, 8);
    if (MaskCrc(Crc32c(header, 8)) != GetLe(header + 8, 4)) {
      fail("length CRC mismatch");
    }
    if (length > (uint64_t{1} << 30)) fail("record longer than 1 GiB");
    std::string data(length, '\0');
    unsigned char footer[4];
    if (std::fread(data.data(), 1, length, f) != length ||
        std::fread(footer, 1, 4, f) != 4) {
      fail("truncated data");
    }
    if (MaskCrc(Crc32c(data.data(), data.size())) != GetLe(footer, 4)) {
      fail("data CRC mismatch");
    }
    tensorboard::Event event;
    if (!event.ParseFromString(data)) fail("not an Event message");
    events.push_back(std::move(event));
  }
  std::fclose(f);
  return events;
}

}  // namespace asyncrl
