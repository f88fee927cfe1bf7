#include "asyncrl/envs/pendulum.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "asyncrl/misc/picture.h"

namespace asyncrl {

Pendulum::Pendulum()
    : ClassicControl(Space::Box({3}, {-1, -1, static_cast<float>(-kMaxSpeed)},
                                {1, 1, static_cast<float>(kMaxSpeed)}),
                     Space::Box({1}, static_cast<float>(-kMaxTorque),
                                static_cast<float>(kMaxTorque))) {
  DeclareParameter("max_torque", 0.1, kMaxTorque,
                   "the largest torque applied (actions beyond it are "
                   "clipped; the action space stays [-2, 2])",
                   &max_torque_);
  DeclareParameter("m", 0.1, 10.0, "the pendulum's mass", &m_);
  DeclareParameter("l", 0.1, 10.0, "the pendulum's length", &l_);
  DeclareParameter("g", 0.0, 20.0, "gravity", &g_);
}

double Pendulum::AngleNormalize(double x) {
  double m = std::fmod(x + kPi, 2 * kPi);
  if (m < 0) m += 2 * kPi;
  return m - kPi;
}

void Pendulum::ResetState(Rng& rng, State& state) {
  state = {rng.Uniform(-kPi, kPi), rng.Uniform(-1.0, 1.0)};
}

void Pendulum::Observe(const State& state, std::array<float, 3>& obs) const {
  obs = {static_cast<float>(std::cos(state[0])),
         static_cast<float>(std::sin(state[0])), static_cast<float>(state[1])};
}

StepResult Pendulum::DoStep(const Action& action) {
  auto& [theta, theta_dot] = state_;
  const double u = std::clamp(static_cast<double>(action.values[0]),
                              -max_torque_, max_torque_);
  const double th = AngleNormalize(theta);
  const double cost = th * th + 0.1 * theta_dot * theta_dot + 0.001 * u * u;
  double new_theta_dot =
      theta_dot +
      (3 * g_ / (2 * l_) * std::sin(theta) + 3.0 / (m_ * l_ * l_) * u) * kDt;
  new_theta_dot = std::clamp(new_theta_dot, -kMaxSpeed, kMaxSpeed);
  theta += new_theta_dot * kDt;
  theta_dot = new_theta_dot;

  StepResult result;
  result.observation = Observation();
  result.reward = -cost;
  return result;
}

// gym's PendulumEnv.render: 500x500 at 30 frames a second (without the
// arrow of the applied torque).
bool Pendulum::Render(Picture& picture) const {
  constexpr int kSize = 500;
  picture.Reset(kSize, kSize, Color::kWhite);
  picture.fps = 30;
  const double bound = 2.2;
  const double scale = kSize / (2 * bound);
  const double offset = kSize / 2.0;
  const double rod_length = l_ * scale;
  const double rod_width = 0.2 * scale;
  const double angle = state_[0] + kPi / 2;
  std::vector<Picture::Point> rod;
  for (const auto& [x, y] : {std::pair{0.0, -rod_width / 2},
                             {0.0, rod_width / 2},
                             {rod_length, rod_width / 2},
                             {rod_length, -rod_width / 2}}) {
    const Picture::Point p = Picture::Turned(x, y, angle, offset, offset);
    rod.push_back(picture.Up(p.x, p.y));
  }
  picture.FillPolygon(rod, Color::kRod);
  const Picture::Point end =
      Picture::Turned(rod_length, 0, angle, offset, offset);
  const Picture::Point tip = picture.Up(end.x, end.y);
  picture.FillCircle(tip.x, tip.y, rod_width / 2, Color::kRod);
  picture.FillCircle(offset, kSize - offset, 0.05 * scale, Color::kBlack);
  return true;
}

}  // namespace asyncrl
