#include "asyncrl/envs/cartpole.h"

#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "asyncrl/misc/picture.h"

namespace asyncrl {

CartPole::CartPole()
    : ClassicControl(
          Space::Box({4},
                     {-2 * kXThreshold, -std::numeric_limits<float>::max(),
                      -2 * kThetaThreshold, -std::numeric_limits<float>::max()},
                     {2 * kXThreshold, std::numeric_limits<float>::max(),
                      2 * kThetaThreshold, std::numeric_limits<float>::max()}),
          Space::Discrete(2)) {
  DeclareParameter("length", 0.05, 5.0, "half the pole's length (m)", &length_);
  DeclareParameter("masspole", 0.01, 10.0, "the pole's mass (kg)", &masspole_);
  DeclareParameter("masscart", 0.1, 100.0, "the cart's mass (kg)", &masscart_);
  DeclareParameter("force_mag", 0.1, 100.0, "the push's force (N)",
                   &force_mag_);
}

void CartPole::ResetState(Rng& rng, State& state) {
  for (double& x : state) x = rng.Uniform(-0.05, 0.05);
}

void CartPole::Observe(const State& state, std::array<float, 4>& obs) const {
  for (size_t i = 0; i < 4; ++i) obs[i] = static_cast<float>(state[i]);
}

StepResult CartPole::DoStep(const Action& action) {
  const double total_mass = masspole_ + masscart_;
  const double polemass_length = masspole_ * length_;
  auto& [x, x_dot, theta, theta_dot] = state_;
  const double force = action.index == 1 ? force_mag_ : -force_mag_;
  const double cos_theta = std::cos(theta);
  const double sin_theta = std::sin(theta);
  const double temp =
      (force + polemass_length * theta_dot * theta_dot * sin_theta) /
      total_mass;
  const double theta_acc =
      (kGravity * sin_theta - cos_theta * temp) /
      (length_ * (4.0 / 3.0 - masspole_ * cos_theta * cos_theta / total_mass));
  const double x_acc =
      temp - polemass_length * theta_acc * cos_theta / total_mass;
  x += kTau * x_dot;
  x_dot += kTau * x_acc;
  theta += kTau * theta_dot;
  theta_dot += kTau * theta_acc;

  StepResult result;
  result.observation = Observation();
  result.reward = 1.0;
  result.terminated = x < -kXThreshold || x > kXThreshold ||
                      theta < -kThetaThreshold || theta > kThetaThreshold;
  return result;
}

// gym's CartPoleEnv.render: 600x400 at 50 frames a second.
bool CartPole::Render(Picture& picture) const {
  constexpr int kWidth = 600;
  constexpr int kHeight = 400;
  picture.Reset(kWidth, kHeight, Color::kWhite);
  picture.fps = 50;
  const double scale = kWidth / (2 * kXThreshold);
  const double pole_width = 10;
  const double pole_length = scale * 2 * length_;
  const double cart_width = 50;
  const double cart_height = 30;
  const double cart_x = state_[0] * scale + kWidth / 2.0;
  const double cart_y = 100;
  const double axle_y = cart_y + cart_height / 4;
  picture.Line(0, kHeight - cart_y, kWidth, kHeight - cart_y, 1, Color::kBlack);
  std::vector<Picture::Point> cart;
  for (const auto& [x, y] : {std::pair{-cart_width / 2, -cart_height / 2},
                             {cart_width / 2, -cart_height / 2},
                             {cart_width / 2, cart_height / 2},
                             {-cart_width / 2, cart_height / 2}}) {
    cart.push_back(picture.Up(cart_x + x, cart_y + y));
  }
  picture.FillPolygon(cart, Color::kBlack);
  std::vector<Picture::Point> pole;
  for (const auto& [x, y] : {std::pair{-pole_width / 2, -pole_width / 2},
                             {-pole_width / 2, pole_length - pole_width / 2},
                             {pole_width / 2, pole_length - pole_width / 2},
                             {pole_width / 2, -pole_width / 2}}) {
    const Picture::Point p = Picture::Turned(x, y, -state_[2], cart_x, axle_y);
    pole.push_back(picture.Up(p.x, p.y));
  }
  picture.FillPolygon(pole, Color::kPole);
  const Picture::Point axle = picture.Up(cart_x, axle_y);
  picture.FillCircle(axle.x, axle.y, pole_width / 2, Color::kAxle);
  return true;
}

}  // namespace asyncrl
