#include "asyncrl/envs/mountain_car.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "asyncrl/misc/picture.h"

namespace asyncrl {

MountainCar::MountainCar()
    : ClassicControl(Space::Box({2},
                                {static_cast<float>(kMinPosition),
                                 static_cast<float>(-kMaxSpeed)},
                                {static_cast<float>(kMaxPosition),
                                 static_cast<float>(kMaxSpeed)}),
                     Space::Discrete(3)) {
  DeclareParameter("force", 0.0001, 0.01, "the engine's force per step",
                   &force_);
  DeclareParameter("gravity", 0.0, 0.01, "gravity's pull per step", &gravity_);
  DeclareParameter("goal_position", -0.4, kMaxPosition,
                   "the position that ends the episode", &goal_position_);
}

void MountainCar::ResetState(Rng& rng, State& state) {
  state = {rng.Uniform(-0.6, -0.4), 0.0};
}

void MountainCar::Observe(const State& state, std::array<float, 2>& obs) const {
  obs = {static_cast<float>(state[0]), static_cast<float>(state[1])};
}

StepResult MountainCar::DoStep(const Action& action) {
  auto& [position, velocity] = state_;
  velocity += static_cast<double>(action.index - 1) * force_ +
              std::cos(3 * position) * (-gravity_);
  velocity = std::clamp(velocity, -kMaxSpeed, kMaxSpeed);
  position += velocity;
  position = std::clamp(position, kMinPosition, kMaxPosition);
  if (position == kMinPosition && velocity < 0) velocity = 0;

  StepResult result;
  result.observation = Observation();
  result.terminated = position >= goal_position_ && velocity >= 0;
  result.reward = -1.0;
  return result;
}

// gym's MountainCarEnv.render: 600x400 at 30 frames a second.
bool MountainCar::Render(Picture& picture) const {
  constexpr int kWidth = 600;
  constexpr int kHeight = 400;
  picture.Reset(kWidth, kHeight, Color::kWhite);
  picture.fps = 30;
  const double scale = kWidth / (kMaxPosition - kMinPosition);
  const auto height = [](double x) { return std::sin(3 * x) * 0.45 + 0.55; };
  constexpr int kCurvePoints = 100;
  for (int i = 0; i + 1 < kCurvePoints; ++i) {
    const double x0 =
        kMinPosition + (kMaxPosition - kMinPosition) * i / (kCurvePoints - 1);
    const double x1 = kMinPosition + (kMaxPosition - kMinPosition) * (i + 1) /
                                         (kCurvePoints - 1);
    const Picture::Point a =
        picture.Up((x0 - kMinPosition) * scale, height(x0) * scale);
    const Picture::Point b =
        picture.Up((x1 - kMinPosition) * scale, height(x1) * scale);
    picture.Line(a.x, a.y, b.x, b.y, 1.5, Color::kBlack);
  }
  const double position = state_[0];
  const double angle = std::cos(3 * position);
  const double clearance = 10;
  const double car_width = 40;
  const double car_height = 20;
  const double base_x = (position - kMinPosition) * scale;
  const double base_y = clearance + height(position) * scale;
  std::vector<Picture::Point> car;
  for (const auto& [x, y] : {std::pair{-car_width / 2, 0.0},
                             {-car_width / 2, car_height},
                             {car_width / 2, car_height},
                             {car_width / 2, 0.0}}) {
    const Picture::Point p = Picture::Turned(x, y, angle, base_x, base_y);
    car.push_back(picture.Up(p.x, p.y));
  }
  picture.FillPolygon(car, Color::kBlack);
  for (double wheel_x : {car_width / 4, -car_width / 4}) {
    const Picture::Point w = Picture::Turned(wheel_x, 0, angle, base_x, base_y);
    const Picture::Point at = picture.Up(w.x, w.y);
    picture.FillCircle(at.x, at.y, car_height / 2.5, Color::kGrey);
  }
  const double flag_x = (goal_position_ - kMinPosition) * scale;
  const double flag_y1 = height(goal_position_) * scale;
  const double flag_y2 = flag_y1 + 50;
  const Picture::Point foot = picture.Up(flag_x, flag_y1);
  const Picture::Point top = picture.Up(flag_x, flag_y2);
  picture.Line(foot.x, foot.y, top.x, top.y, 1.5, Color::kBlack);
  picture.FillPolygon({top, picture.Up(flag_x, flag_y2 - 10),
                       picture.Up(flag_x + 25, flag_y2 - 5)},
                      Color::kJoint);
  return true;
}

}  // namespace asyncrl
