// A picture of an environment's state (--demo --record): an image of
// indices into one fixed palette, drawn with filled shapes, and turned into
// GIF frames by misc/gif_file.h. The environments draw themselves into it
// (Env::Render) in their own coordinates, the way gym's render() does.
#ifndef ASYNCRL_MISC_PICTURE_H_
#define ASYNCRL_MISC_PICTURE_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace asyncrl {

// The palette every picture uses (GIF frames hold at most 256 colours; one
// fixed palette keeps the frames' colours the same and needs no
// quantization).
enum class Color : uint8_t {
  kWhite,
  kBlack,
  kGrey,
  kLightGrey,
  kDarkGrey,
  kPole,      // gym's CartPole pole (202, 152, 101)
  kAxle,      // gym's CartPole axle (129, 132, 203)
  kRod,       // gym's Pendulum rod (204, 77, 77)
  kLink,      // gym's Acrobot links (0, 204, 204)
  kJoint,     // gym's Acrobot joints and MountainCar's flag (204, 204, 0)
  kBoard,     // the board games' board
  kRed,       // the first player's pieces
  kYellow,    // the second player's pieces
  kChannel0,  // MinAtar's channels, one colour each
  kChannel1,
  kChannel2,
  kChannel3,
  kChannel4,
  kChannel5,
  kChannel6,
  kChannel7,
  kChannel8,
  kChannel9,
  kSky,      // gym's BipedalWalker sky (215, 215, 255)
  kGround,   // BipedalWalker's ground (102, 153, 76)
  kGrass,    // BipedalWalker's terrain line (76, 255, 76)
  kHull,     // BipedalWalker's hull (127, 51, 229)
  kLegFar,   // BipedalWalker's far leg (178, 101, 152)
  kLegNear,  // BipedalWalker's near leg (128, 51, 102)
  kCount
};
constexpr int kChannelColors = 10;

struct Rgb {
  uint8_t r, g, b;
};
// Color's values as RGB, in its order.
const std::array<Rgb, static_cast<size_t>(Color::kCount)>& Palette();

class Picture {
 public:
  struct Point {
    double x, y;
  };

  // A new picture of width x height pixels, all `background`. (0, 0) is the
  // top-left corner; x grows to the right, y downwards.
  void Reset(int width, int height, Color background);

  int width() const { return width_; }
  int height() const { return height_; }
  // The palette index of every pixel, row by row from the top.
  const std::vector<uint8_t>& pixels() const { return pixels_; }
  Color At(int x, int y) const {
    return static_cast<Color>(pixels_[static_cast<size_t>(y) * width_ + x]);
  }

  // A point given with y upwards from the bottom edge (how gym draws before
  // it flips the image), in the picture's coordinates.
  Point Up(double x, double y) const { return {x, height_ - y}; }
  // Point (x, y) turned by `angle` radians (counter-clockwise with y up)
  // about the origin, then moved by (dx, dy): pygame's Vector2.rotate_rad.
  static Point Turned(double x, double y, double angle, double dx = 0,
                      double dy = 0);

  // Frames a second the recording plays at (the environment's, as gym's
  // metadata["render_fps"]).
  int fps = 30;

  // Filled shapes; parts outside the picture are clipped. Pixels whose
  // centre lies inside the shape are drawn.
  void FillRect(double x0, double y0, double x1, double y1, Color color);
  void FillPolygon(const std::vector<Point>& points, Color color);
  void FillCircle(double cx, double cy, double radius, Color color);
  // A straight band `width` wide from (x0, y0) to (x1, y1).
  void Line(double x0, double y0, double x1, double y1, double width,
            Color color);

 private:
  int width_ = 0;
  int height_ = 0;
  std::vector<uint8_t> pixels_;
};

}  // namespace asyncrl

#endif  // ASYNCRL_MISC_PICTURE_H_
