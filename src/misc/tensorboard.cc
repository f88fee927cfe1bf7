#include "asyncrl/misc/tensorboard.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
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

EventWriter::EventWriter(const std::string& dir) : EventWriter(dir, "") {}

EventWriter::EventWriter(const std::string& dir, const std::string& file) {
  char host[256] = "localhost";
  gethostname(host, sizeof(host) - 1);
  path_ =
      (std::filesystem::path(dir) /
       (!file.empty() ? file
                      : "events.out.tfevents." +
                            std::to_string(std::time(nullptr)) + "." + host))
          .string();
  fd_ = open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    throw std::runtime_error("cannot create " + path_ + ": " +
                             std::strerror(errno));
  }
  struct stat st {};
  if (fstat(fd_, &st) != 0) {
    const int error = errno;
    close(fd_);
    fd_ = -1;
    throw std::runtime_error("cannot read the size of " + path_ + ": " +
                             std::strerror(error));
  }
  size_ = st.st_size;
  if (size_ > 0) return;  // Appended to: its file_version record is there.
  tensorboard::Event version;
  version.set_wall_time(static_cast<double>(std::time(nullptr)));
  version.set_file_version("brain.Event:2");
  WriteEvent(version);
  Flush();
}

EventWriter::~EventWriter() {
  if (fd_ < 0) return;
  Flush();
  close(fd_);
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
  pending_.append(header, sizeof(header));
  pending_.append(data);
  pending_.append(footer, sizeof(footer));
  pending_ends_.push_back(pending_.size());
}

bool EventWriter::Flush() {
  if (pending_.empty()) return true;
  size_t done = 0;
  int error = 0;
  while (done < pending_.size()) {
    const ssize_t n =
        write(fd_, pending_.data() + done, pending_.size() - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      error = n < 0 ? errno : ENOSPC;  // write() returning 0: nothing fits.
      break;
    }
  }
  if (error == 0) {
    size_ += static_cast<int64_t>(done);
  } else {
    // The records written whole stay; the file is cut back to the end of
    // the last of them (the part written went to the end of the file, past
    // size_), and the rest of this flush's records are lost.
    const size_t whole = static_cast<size_t>(
        std::upper_bound(pending_ends_.begin(), pending_ends_.end(), done) -
        pending_ends_.begin());
    const size_t kept = whole == 0 ? 0 : pending_ends_[whole - 1];
    if (done > kept &&
        ftruncate(fd_, size_ + static_cast<int64_t>(kept)) != 0) {
      // Cannot cut: the cut record stays, and ReadEventFile reports it.
      size_ += static_cast<int64_t>(done);
    } else {
      size_ += static_cast<int64_t>(kept);
    }
    lost_ += static_cast<int64_t>(pending_ends_.size() - whole);
    if (first_error_.empty()) first_error_ = std::strerror(error);
  }
  pending_.clear();
  pending_ends_.clear();
  return error == 0;
}

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
