// Pictures and their GIF files (--demo --record): the shapes cover the
// pixels they should, and a recording reads back frame by frame.
#include "asyncrl/misc/picture.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <filesystem>
#include <stdexcept>

#include "asyncrl/misc/gif_file.h"
#include "experiments/test_basics.h"

namespace asyncrl {
// Named apart from the other test files compiled with it in one unit
// (tests/CMakeLists.txt: unity groups).
namespace picture_test {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

int Count(const Picture& p, Color c) {
  int n = 0;
  for (uint8_t v : p.pixels()) n += v == static_cast<uint8_t>(c) ? 1 : 0;
  return n;
}

TEST(PictureTest, ShapesCoverThePixelsWhoseCentresTheyHold) {
  Picture p;
  p.Reset(40, 30, Color::kWhite);
  EXPECT_EQ(Count(p, Color::kWhite), 40 * 30);
  p.FillRect(2, 3, 12, 8, Color::kBlack);  // 10 x 5 pixels.
  EXPECT_EQ(Count(p, Color::kBlack), 50);
  EXPECT_EQ(p.At(2, 3), Color::kBlack);
  EXPECT_EQ(p.At(11, 7), Color::kBlack);
  EXPECT_EQ(p.At(12, 7), Color::kWhite);
  EXPECT_EQ(p.At(1, 3), Color::kWhite);
  // A right triangle of legs 20: half the square, within an edge's pixels.
  p.Reset(40, 30, Color::kWhite);
  p.FillPolygon({{0, 0}, {20, 0}, {0, 20}}, Color::kRed);
  EXPECT_NEAR(Count(p, Color::kRed), 200, 20);
  // A circle of radius 10: pi r^2 within the boundary's pixels.
  p.Reset(40, 30, Color::kWhite);
  p.FillCircle(20, 15, 10, Color::kRod);
  EXPECT_NEAR(Count(p, Color::kRod), 314, 20);
  EXPECT_EQ(p.At(20, 15), Color::kRod);
  EXPECT_EQ(p.At(20, 3), Color::kWhite);
  // A band 4 wide and 20 long.
  p.Reset(40, 30, Color::kWhite);
  p.Line(5, 10, 25, 10, 4, Color::kLink);
  EXPECT_EQ(Count(p, Color::kLink), 80);
}

TEST(PictureTest, ShapesAreClippedAndNonShapesDrawNothing) {
  Picture p;
  p.Reset(10, 10, Color::kWhite);
  p.FillRect(-100, -100, 5, 200, Color::kBlack);
  EXPECT_EQ(Count(p, Color::kBlack), 50);
  p.FillCircle(1000, 1000, 5, Color::kRed);
  EXPECT_EQ(Count(p, Color::kRed), 0);
  p.FillPolygon({{0, 0}, {1, 1}}, Color::kRed);  // Not a shape.
  p.FillCircle(5, 5, 0, Color::kRed);
  p.FillCircle(5, 5, -3, Color::kRed);
  p.FillCircle(5, 5, std::nan(""), Color::kRed);
  p.FillPolygon({{0, 0}, {std::nan(""), 5}, {5, 5}}, Color::kRed);
  p.FillRect(-1e300, -1e300, 1e300, 1e300, Color::kGrey);  // All of it.
  EXPECT_EQ(Count(p, Color::kGrey), 100);
  EXPECT_EQ(Count(p, Color::kRed), 0);
}

TEST(PictureTest, UpAndTurnedFollowGymsCoordinates) {
  Picture p;
  p.Reset(100, 50, Color::kWhite);
  EXPECT_DOUBLE_EQ(p.Up(10, 0).y, 50);
  EXPECT_DOUBLE_EQ(p.Up(10, 50).y, 0);
  const Picture::Point q = Picture::Turned(1, 0, M_PI / 2, 5, 6);
  EXPECT_NEAR(q.x, 5, 1e-12);
  EXPECT_NEAR(q.y, 7, 1e-12);
}

TEST(PictureTest, AnImpossibleSizeIsRefused) {
  Picture p;
  EXPECT_THROW(p.Reset(0, 10, Color::kWhite), std::invalid_argument);
  EXPECT_THROW(p.Reset(10, 5000, Color::kWhite), std::invalid_argument);
}

TEST(GifFileTest, FramesReadBackAsDrawnWithTheirDelays) {
  TempDir dir("gif");
  const std::string path = (dir.path() / "a.gif").string();
  GifRecording gif(path);
  Picture p;
  std::vector<std::vector<uint8_t>> drawn;
  for (int i = 0; i < 5; ++i) {
    p.Reset(60, 40, Color::kWhite);
    p.fps = 50;
    p.FillRect(i * 10, 5, i * 10 + 8, 20, Color::kPole);
    drawn.push_back(p.pixels());
    gif.AddFrame(p);
  }
  gif.AddFrame(p);  // A frame equal to the last one.
  drawn.push_back(p.pixels());
  EXPECT_EQ(gif.frames(), 6);
  EXPECT_FALSE(fs::exists(path)) << "written before Save";
  gif.Save();
  const GifFrames read = ReadGif(path);
  EXPECT_EQ(read.width, 60);
  EXPECT_EQ(read.height, 40);
  EXPECT_TRUE(read.loops);
  ASSERT_EQ(read.frames.size(), drawn.size());
  for (size_t i = 0; i < drawn.size(); ++i) {
    EXPECT_EQ(read.frames[i], drawn[i]) << "frame " << i;
    EXPECT_EQ(read.delays_cs[i], 2) << "frame " << i;  // 50 fps.
  }
  const Rgb pole = read.palette.at(static_cast<size_t>(Color::kPole));
  EXPECT_EQ(pole.r, 202);
  EXPECT_EQ(pole.g, 152);
  EXPECT_EQ(pole.b, 101);
  for (const auto& e : fs::directory_iterator(dir.path())) {
    EXPECT_EQ(e.path().filename(), "a.gif") << "left behind: " << e.path();
  }
}

TEST(GifFileTest, AFrameOfAnotherSizeIsRefused) {
  TempDir dir("gif_size");
  GifRecording gif((dir.path() / "a.gif").string());
  Picture p;
  p.Reset(10, 10, Color::kWhite);
  gif.AddFrame(p);
  p.Reset(11, 10, Color::kWhite);
  EXPECT_THROW(gif.AddFrame(p), std::invalid_argument);
}

TEST(GifFileTest, PathsThatCannotBeWrittenAreRefusedBeforeAnyFrame) {
  TempDir dir("gif_paths");
  EXPECT_THROW(GifRecording((dir.path() / "no" / "a.gif").string()),
               std::runtime_error);
  EXPECT_THROW(GifRecording(dir.str()), std::runtime_error);
  EXPECT_THROW(GifRecording("/dev/null"), std::runtime_error);
  EXPECT_THROW(GifRecording(""), std::runtime_error);
  if (geteuid() != 0) {  // root writes anywhere.
    const fs::path locked = dir.path() / "locked";
    fs::create_directories(locked);
    chmod(locked.c_str(), 0500);
    EXPECT_THROW(GifRecording((locked / "a.gif").string()), std::runtime_error);
    chmod(locked.c_str(), 0700);
  }
}

TEST(GifFileTest, NoFramesIsAnErrorAndWritesNothing) {
  TempDir dir("gif_empty");
  const fs::path path = dir.path() / "a.gif";
  GifRecording gif(path.string());
  EXPECT_THROW(gif.Save(), std::runtime_error);
  EXPECT_FALSE(fs::exists(path));
}

TEST(GifFileTest, AnEarlierFileIsReplacedWholeThroughALink) {
  TempDir dir("gif_link");
  const fs::path target = dir.path() / "target.gif";
  const fs::path link = dir.path() / "link.gif";
  { std::ofstream(target) << "old"; }
  fs::create_symlink(target, link);
  GifRecording gif(link.string());
  Picture p;
  p.Reset(8, 8, Color::kBlack);
  gif.AddFrame(p);
  gif.Save();
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(ReadGif(target.string()).frames.size(), 1u);
}

TEST(GifFileTest, ReadingAFileThatIsNotAGifSaysSo) {
  TempDir dir("gif_bad");
  const fs::path path = dir.path() / "bad.gif";
  { std::ofstream(path) << "not a gif"; }
  EXPECT_THROW(ReadGif(path.string()), std::runtime_error);
  EXPECT_THROW(ReadGif((dir.path() / "missing.gif").string()),
               std::runtime_error);
}

}  // namespace
}  // namespace picture_test
}  // namespace asyncrl
