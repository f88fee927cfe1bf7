#include "asyncrl/misc/gif_file.h"

#include <gif_lib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "asyncrl/misc/output_file.h"

namespace asyncrl {
namespace {

constexpr int kMapSize = 32;  // A power of two >= the palette's size.
static_assert(static_cast<int>(Color::kCount) <= kMapSize);

GifFileType* AsGif(void* gif) { return static_cast<GifFileType*>(gif); }

int AppendBytes(GifFileType* gif, const GifByteType* data, int length) {
  static_cast<std::string*>(gif->UserData)
      ->append(reinterpret_cast<const char*>(data), length);
  return length;
}

struct MapObject {
  explicit MapObject(ColorMapObject* m) : map(m) {}
  ~MapObject() { GifFreeMapObject(map); }
  MapObject(const MapObject&) = delete;
  MapObject& operator=(const MapObject&) = delete;
  ColorMapObject* map;
};

}  // namespace

GifRecording::GifRecording(std::string path) : path_(std::move(path)) {
  const std::string problem = OutputFileWritable(path_);
  if (!problem.empty()) {
    throw std::runtime_error("cannot write " + path_ + ": " + problem);
  }
  int error = 0;
  GifFileType* gif = EGifOpen(&bytes_, AppendBytes, &error);
  if (gif == nullptr) {
    throw std::runtime_error("cannot write " + path_ + ": " +
                             GifErrorString(error));
  }
  gif_ = gif;
}

GifRecording::~GifRecording() {
  if (gif_ != nullptr) EGifCloseFile(AsGif(gif_), nullptr);
}

void GifRecording::Check(int status, const char* what) {
  if (status != GIF_OK) {
    throw std::runtime_error("cannot write " + path_ + ": " + what + ": " +
                             GifErrorString(AsGif(gif_)->Error));
  }
}

void GifRecording::AddFrame(const Picture& picture) {
  if (gif_ == nullptr) {
    throw std::logic_error("GifRecording: a frame after Save()");
  }
  GifFileType* gif = AsGif(gif_);
  if (frames_ == 0) {
    width_ = picture.width();
    height_ = picture.height();
    GifColorType colors[kMapSize] = {};
    const auto& palette = Palette();
    for (size_t i = 0; i < palette.size(); ++i) {
      colors[i] = {palette[i].r, palette[i].g, palette[i].b};
    }
    MapObject map(GifMakeMapObject(kMapSize, colors));
    if (map.map == nullptr) throw std::bad_alloc();
    EGifSetGifVersion(gif, true);
    Check(EGifPutScreenDesc(gif, width_, height_, 8, 0, map.map),
          "screen descriptor");
    // Loop forever (the NETSCAPE2.0 application extension).
    Check(EGifPutExtensionLeader(gif, APPLICATION_EXT_FUNC_CODE), "loop");
    Check(EGifPutExtensionBlock(gif, 11, "NETSCAPE2.0"), "loop");
    const unsigned char loop[3] = {1, 0, 0};
    Check(EGifPutExtensionBlock(gif, 3, loop), "loop");
    Check(EGifPutExtensionTrailer(gif), "loop");
  } else if (picture.width() != width_ || picture.height() != height_) {
    throw std::invalid_argument(
        "GifRecording: frame " + std::to_string(frames_) + " is " +
        std::to_string(picture.width()) + "x" +
        std::to_string(picture.height()) + "; the recording's frames are " +
        std::to_string(width_) + "x" + std::to_string(height_));
  }
  const std::vector<uint8_t>& pixels = picture.pixels();
  // Only the rectangle that changed (the rest of the last frame stays).
  int x0 = 0, y0 = 0, x1 = width_ - 1, y1 = height_ - 1;
  if (frames_ > 0) {
    x0 = width_;
    y0 = height_;
    x1 = -1;
    y1 = -1;
    for (int y = 0; y < height_; ++y) {
      const size_t row = static_cast<size_t>(y) * width_;
      for (int x = 0; x < width_; ++x) {
        if (pixels[row + x] == previous_[row + x]) continue;
        x0 = std::min(x0, x);
        x1 = std::max(x1, x);
        y0 = std::min(y0, y);
        y1 = std::max(y1, y);
      }
    }
    if (x1 < 0) x0 = y0 = x1 = y1 = 0;  // Unchanged: one pixel.
  }
  GraphicsControlBlock control{};
  control.DisposalMode = DISPOSE_DO_NOT;
  control.UserInputFlag = false;
  control.DelayTime =
      static_cast<int>(std::lround(100.0 / std::max(1, picture.fps)));
  control.TransparentColor = NO_TRANSPARENT_COLOR;
  GifByteType extension[4];
  const size_t length = EGifGCBToExtension(&control, extension);
  Check(EGifPutExtension(gif, GRAPHICS_EXT_FUNC_CODE, static_cast<int>(length),
                         extension),
        "frame delay");
  const int w = x1 - x0 + 1;
  Check(EGifPutImageDesc(gif, x0, y0, w, y1 - y0 + 1, false, nullptr),
        "image descriptor");
  std::vector<GifPixelType> line(w);
  for (int y = y0; y <= y1; ++y) {
    std::memcpy(line.data(),
                pixels.data() + static_cast<size_t>(y) * width_ + x0, w);
    Check(EGifPutLine(gif, line.data(), w), "image");
  }
  previous_ = pixels;
  ++frames_;
}

void GifRecording::Save() {
  if (gif_ == nullptr) {
    throw std::logic_error("GifRecording: Save() twice");
  }
  if (frames_ == 0) {
    throw std::runtime_error("cannot write " + path_ + ": no frames");
  }
  int error = 0;
  const int status = EGifCloseFile(AsGif(gif_), &error);
  gif_ = nullptr;
  if (status != GIF_OK) {
    throw std::runtime_error("cannot write " + path_ + ": " +
                             GifErrorString(error));
  }
  WriteOutputFile(path_, bytes_, "record");
}

GifFrames ReadGif(const std::string& path) {
  int error = 0;
  GifFileType* gif = DGifOpenFileName(path.c_str(), &error);
  if (gif == nullptr) {
    throw std::runtime_error("cannot read " + path + ": " +
                             GifErrorString(error));
  }
  struct Closer {
    GifFileType* gif;
    ~Closer() { DGifCloseFile(gif, nullptr); }
  } closer{gif};
  if (DGifSlurp(gif) != GIF_OK) {
    throw std::runtime_error("cannot read " + path + ": " +
                             GifErrorString(gif->Error));
  }
  GifFrames out;
  out.width = gif->SWidth;
  out.height = gif->SHeight;
  if (gif->SColorMap != nullptr) {
    for (int i = 0; i < gif->SColorMap->ColorCount; ++i) {
      const GifColorType& c = gif->SColorMap->Colors[i];
      out.palette.push_back({c.Red, c.Green, c.Blue});
    }
  }
  std::vector<uint8_t> canvas(static_cast<size_t>(out.width) * out.height,
                              static_cast<uint8_t>(gif->SBackGroundColor));
  for (int i = 0; i < gif->ImageCount; ++i) {
    const SavedImage& image = gif->SavedImages[i];
    for (int e = 0; e < image.ExtensionBlockCount; ++e) {
      const ExtensionBlock& block = image.ExtensionBlocks[e];
      if (block.Function == APPLICATION_EXT_FUNC_CODE &&
          block.ByteCount == 11 &&
          std::memcmp(block.Bytes, "NETSCAPE2.0", 11) == 0) {
        out.loops = true;
      }
    }
    GraphicsControlBlock control{};
    DGifSavedExtensionToGCB(gif, i, &control);
    const GifImageDesc& d = image.ImageDesc;
    if (d.Left < 0 || d.Top < 0 || d.Left + d.Width > out.width ||
        d.Top + d.Height > out.height) {
      throw std::runtime_error("cannot read " + path + ": frame " +
                               std::to_string(i) + " lies outside the screen");
    }
    for (int y = 0; y < d.Height; ++y) {
      std::memcpy(
          canvas.data() + static_cast<size_t>(d.Top + y) * out.width + d.Left,
          image.RasterBits + static_cast<size_t>(y) * d.Width, d.Width);
    }
    out.frames.push_back(canvas);
    out.delays_cs.push_back(control.DelayTime);
  }
  return out;
}

}  // namespace asyncrl
