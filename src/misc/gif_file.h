// Animated GIF files of pictures (misc/picture.h), through Debian's giflib:
// --demo --record FILE. Frames are encoded as they come (each one only the
// rectangle that changed since the one before) and the file is written
// whole at the end, as misc/output_file.h writes every output file.
#ifndef ASYNCRL_MISC_GIF_FILE_H_
#define ASYNCRL_MISC_GIF_FILE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "asyncrl/misc/picture.h"

namespace asyncrl {

class GifRecording {
 public:
  // Checks that `path` can be written (OutputFileWritable) before any frame
  // is made: throws std::runtime_error "cannot write PATH: WHY".
  explicit GifRecording(std::string path);
  ~GifRecording();
  GifRecording(const GifRecording&) = delete;
  GifRecording& operator=(const GifRecording&) = delete;

  // The first frame sets the size; a frame of another size throws
  // std::invalid_argument. Each frame shows for 1/picture.fps seconds
  // (GIF counts in hundredths).
  void AddFrame(const Picture& picture);
  int64_t frames() const { return frames_; }
  // Bytes encoded so far.
  size_t size() const { return bytes_.size(); }
  // Ends the file and writes it (at least one frame); throws
  // std::runtime_error "cannot write PATH: WHY".
  void Save();

 private:
  void Check(int status, const char* what);

  std::string path_;
  std::string bytes_;
  void* gif_ = nullptr;  // GifFileType*.
  std::vector<uint8_t> previous_;
  int width_ = 0;
  int height_ = 0;
  int64_t frames_ = 0;
};

// A GIF file read back, every frame composited as a viewer shows it (for
// tests and tools): palette indices per pixel and the frame's delay.
struct GifFrames {
  int width = 0;
  int height = 0;
  std::vector<Rgb> palette;
  std::vector<std::vector<uint8_t>> frames;
  std::vector<int> delays_cs;  // Hundredths of a second.
  bool loops = false;          // NETSCAPE2.0 looping extension present.
};
// Throws std::runtime_error "cannot read PATH: WHY".
GifFrames ReadGif(const std::string& path);

}  // namespace asyncrl

#endif  // ASYNCRL_MISC_GIF_FILE_H_
