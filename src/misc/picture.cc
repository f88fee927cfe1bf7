#include "asyncrl/misc/picture.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace asyncrl {

const std::array<Rgb, static_cast<size_t>(Color::kCount)>& Palette() {
  static const std::array<Rgb, static_cast<size_t>(Color::kCount)> kPalette = {{
      {255, 255, 255},  // kWhite
      {0, 0, 0},        // kBlack
      {128, 128, 128},  // kGrey
      {220, 220, 220},  // kLightGrey
      {40, 40, 40},     // kDarkGrey
      {202, 152, 101},  // kPole
      {129, 132, 203},  // kAxle
      {204, 77, 77},    // kRod
      {0, 204, 204},    // kLink
      {204, 204, 0},    // kJoint
      {30, 70, 170},    // kBoard
      {220, 40, 40},    // kRed
      {245, 205, 40},   // kYellow
      // MinAtar's channels: ten colours apart on a dark background.
      {230, 25, 75},
      {60, 180, 75},
      {255, 225, 25},
      {67, 99, 216},
      {245, 130, 49},
      {145, 30, 180},
      {66, 212, 244},
      {240, 50, 230},
      {191, 239, 69},
      {250, 190, 212},
      {215, 215, 255},  // kSky
      {102, 153, 76},   // kGround
      {76, 255, 76},    // kGrass
      {127, 51, 229},   // kHull
      {178, 101, 152},  // kLegFar
      {128, 51, 102},   // kLegNear
  }};
  return kPalette;
}

void Picture::Reset(int width, int height, Color background) {
  if (width <= 0 || height <= 0 || width > 4096 || height > 4096) {
    throw std::invalid_argument("picture size " + std::to_string(width) + "x" +
                                std::to_string(height) +
                                " is invalid; accepted: 1 to 4096 each");
  }
  width_ = width;
  height_ = height;
  pixels_.assign(static_cast<size_t>(width) * height,
                 static_cast<uint8_t>(background));
}

Picture::Point Picture::Turned(double x, double y, double angle, double dx,
                               double dy) {
  const double c = std::cos(angle);
  const double s = std::sin(angle);
  return {x * c - y * s + dx, x * s + y * c + dy};
}

void Picture::FillRect(double x0, double y0, double x1, double y1,
                       Color color) {
  FillPolygon({{x0, y0}, {x1, y0}, {x1, y1}, {x0, y1}}, color);
}

// Scan lines through the pixel centres; each crossing of an edge toggles
// inside/outside (even-odd rule).
void Picture::FillPolygon(const std::vector<Point>& points, Color color) {
  if (points.size() < 3) return;
  double top = points[0].y;
  double bottom = points[0].y;
  for (const Point& p : points) {
    if (!std::isfinite(p.x) || !std::isfinite(p.y)) return;  // No shape.
    top = std::min(top, p.y);
    bottom = std::max(bottom, p.y);
  }
  // Clamped as doubles first: any finite coordinate converts safely.
  const int y_first = static_cast<int>(std::max(0.0, std::ceil(top - 0.5)));
  const int y_last = static_cast<int>(
      std::min(static_cast<double>(height_ - 1), std::floor(bottom - 0.5)));
  std::vector<double> crossings;
  for (int y = y_first; y <= y_last; ++y) {
    const double cy = y + 0.5;
    crossings.clear();
    for (size_t i = 0; i < points.size(); ++i) {
      const Point& a = points[i];
      const Point& b = points[(i + 1) % points.size()];
      if ((a.y <= cy) == (b.y <= cy)) continue;  // Does not cross.
      crossings.push_back(a.x + (cy - a.y) * (b.x - a.x) / (b.y - a.y));
    }
    std::sort(crossings.begin(), crossings.end());
    for (size_t i = 0; i + 1 < crossings.size(); i += 2) {
      const double first = std::max(0.0, std::ceil(crossings[i] - 0.5));
      const double last = std::min(static_cast<double>(width_ - 1),
                                   std::floor(crossings[i + 1] - 0.5));
      if (!(first <= last)) continue;
      uint8_t* row = pixels_.data() + static_cast<size_t>(y) * width_;
      std::fill(row + static_cast<int>(first), row + static_cast<int>(last) + 1,
                static_cast<uint8_t>(color));
    }
  }
}

void Picture::FillCircle(double cx, double cy, double radius, Color color) {
  if (!(radius > 0)) return;
  // A regular polygon whose edges stay within a quarter pixel of the circle:
  // its sagitta, radius * (1 - cos(pi / sides)), at most 1/4.
  const double half_angle = std::acos(std::max(0.0, 1.0 - 0.25 / radius));
  const int sides =
      std::clamp(static_cast<int>(std::ceil(M_PI / half_angle)), 8, 256);
  std::vector<Point> points(sides);
  for (int i = 0; i < sides; ++i) {
    const double a = 2 * M_PI * i / sides;
    points[i] = {cx + radius * std::cos(a), cy + radius * std::sin(a)};
  }
  FillPolygon(points, color);
}

void Picture::Line(double x0, double y0, double x1, double y1, double width,
                   Color color) {
  const double dx = x1 - x0;
  const double dy = y1 - y0;
  const double length = std::hypot(dx, dy);
  if (length == 0) return;
  const double nx = -dy / length * width / 2;
  const double ny = dx / length * width / 2;
  FillPolygon({{x0 + nx, y0 + ny},
               {x1 + nx, y1 + ny},
               {x1 - nx, y1 - ny},
               {x0 - nx, y0 - ny}},
              color);
}

}  // namespace asyncrl
