#include "asyncrl/envs/acrobot.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "asyncrl/misc/picture.h"

namespace asyncrl {
namespace {

constexpr double kG = 9.8;

double Wrap(double x, double low, double high) {
  const double diff = high - low;
  while (x > high) x -= diff;
  while (x < low) x += diff;
  return x;
}

}  // namespace

Acrobot::Acrobot()
    : ClassicControl(Space::Box({6},
                                {-1, -1, -1, -1, static_cast<float>(-kMaxVel1),
                                 static_cast<float>(-kMaxVel2)},
                                {1, 1, 1, 1, static_cast<float>(kMaxVel1),
                                 static_cast<float>(kMaxVel2)}),
                     Space::Discrete(3)) {
  DeclareParameter("link_length_1", 0.1, 10.0, "the first link's length",
                   &link_length_1_);
  DeclareParameter("link_mass_1", 0.1, 10.0, "the first link's mass",
                   &link_mass_1_);
  DeclareParameter("link_mass_2", 0.1, 10.0, "the second link's mass",
                   &link_mass_2_);
  DeclareParameter("link_com_pos_1", 0.05, 5.0,
                   "the first link's centre of mass (from its joint)",
                   &link_com_pos_1_);
  DeclareParameter("link_com_pos_2", 0.05, 5.0,
                   "the second link's centre of mass (from its joint)",
                   &link_com_pos_2_);
  DeclareParameter("link_moi", 0.1, 10.0, "both links' moment of inertia",
                   &link_moi_);
}

void Acrobot::ResetState(Rng& rng, State& state) {
  for (double& x : state) x = rng.Uniform(-0.1, 0.1);
}

void Acrobot::Observe(const State& state, std::array<float, 6>& obs) const {
  obs = {static_cast<float>(std::cos(state[0])),
         static_cast<float>(std::sin(state[0])),
         static_cast<float>(std::cos(state[1])),
         static_cast<float>(std::sin(state[1])),
         static_cast<float>(state[2]),
         static_cast<float>(state[3])};
}

std::array<double, 4> Acrobot::Derivatives(const std::array<double, 4>& s,
                                           double torque) const {
  const double kMass1 = link_mass_1_;
  const double kMass2 = link_mass_2_;
  const double kLength1 = link_length_1_;
  const double kCom1 = link_com_pos_1_;
  const double kCom2 = link_com_pos_2_;
  const double kMoi = link_moi_;
  const auto [theta1, theta2, dtheta1, dtheta2] = s;
  const double d1 = kMass1 * kCom1 * kCom1 +
                    kMass2 * (kLength1 * kLength1 + kCom2 * kCom2 +
                              2 * kLength1 * kCom2 * std::cos(theta2)) +
                    kMoi + kMoi;
  const double d2 =
      kMass2 * (kCom2 * kCom2 + kLength1 * kCom2 * std::cos(theta2)) + kMoi;
  const double phi2 = kMass2 * kCom2 * kG * std::cos(theta1 + theta2 - kPi / 2);
  const double phi1 =
      -kMass2 * kLength1 * kCom2 * dtheta2 * dtheta2 * std::sin(theta2) -
      2 * kMass2 * kLength1 * kCom2 * dtheta2 * dtheta1 * std::sin(theta2) +
      (kMass1 * kCom1 + kMass2 * kLength1) * kG * std::cos(theta1 - kPi / 2) +
      phi2;
  const double ddtheta2 =
      (torque + d2 / d1 * phi1 -
       kMass2 * kLength1 * kCom2 * dtheta1 * dtheta1 * std::sin(theta2) -
       phi2) /
      (kMass2 * kCom2 * kCom2 + kMoi - d2 * d2 / d1);
  const double ddtheta1 = -(d2 * ddtheta2 + phi1) / d1;
  return {dtheta1, dtheta2, ddtheta1, ddtheta2};
}

StepResult Acrobot::DoStep(const Action& action) {
  const double torque = static_cast<double>(action.index) - 1.0;
  auto add = [](const std::array<double, 4>& y, double h,
                const std::array<double, 4>& k) {
    return std::array<double, 4>{y[0] + h * k[0], y[1] + h * k[1],
                                 y[2] + h * k[2], y[3] + h * k[3]};
  };
  const auto k1 = Derivatives(state_, torque);
  const auto k2 = Derivatives(add(state_, kDt / 2, k1), torque);
  const auto k3 = Derivatives(add(state_, kDt / 2, k2), torque);
  const auto k4 = Derivatives(add(state_, kDt, k3), torque);
  std::array<double, 4> next;
  for (size_t i = 0; i < 4; ++i) {
    next[i] = state_[i] + kDt / 6.0 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i]);
  }
  next[0] = Wrap(next[0], -kPi, kPi);
  next[1] = Wrap(next[1], -kPi, kPi);
  next[2] = std::clamp(next[2], -kMaxVel1, kMaxVel1);
  next[3] = std::clamp(next[3], -kMaxVel2, kMaxVel2);
  state_ = next;

  StepResult result;
  result.observation = Observation();
  result.terminated =
      -std::cos(state_[0]) - std::cos(state_[1] + state_[0]) > 1.0;
  result.reward = result.terminated ? 0.0 : -1.0;
  return result;
}

// gym's AcrobotEnv.render: 500x500 at 15 frames a second.
bool Acrobot::Render(Picture& picture) const {
  constexpr int kSize = 500;
  picture.Reset(kSize, kSize, Color::kWhite);
  picture.fps = 15;
  const double link_length_2 = 1.0;
  const double bound = link_length_1_ + link_length_2 + 0.2;
  const double scale = kSize / (2 * bound);
  const double offset = kSize / 2.0;
  const double s0 = state_[0];
  const double s1 = state_[1];
  // The joints (x to the right, y up; gym swaps its (row, column) pairs).
  const double x1 = link_length_1_ * std::sin(s0) * scale;
  const double y1 = -link_length_1_ * std::cos(s0) * scale;
  const double joints[2][2] = {{0, 0}, {x1, y1}};
  const double thetas[2] = {s0 - kPi / 2, s0 + s1 - kPi / 2};
  const double lengths[2] = {link_length_1_ * scale, link_length_2 * scale};
  const Picture::Point left =
      picture.Up(-bound * scale + offset, scale + offset);
  const Picture::Point right =
      picture.Up(bound * scale + offset, scale + offset);
  picture.Line(left.x, left.y, right.x, right.y, 1, Color::kBlack);
  for (int i = 0; i < 2; ++i) {
    const double half = 0.1 * scale;
    std::vector<Picture::Point> link;
    for (const auto& [x, y] : {std::pair{0.0, half},
                               {0.0, -half},
                               {lengths[i], -half},
                               {lengths[i], half}}) {
      const Picture::Point p = Picture::Turned(
          x, y, thetas[i], joints[i][0] + offset, joints[i][1] + offset);
      link.push_back(picture.Up(p.x, p.y));
    }
    picture.FillPolygon(link, Color::kLink);
    const Picture::Point joint =
        picture.Up(joints[i][0] + offset, joints[i][1] + offset);
    picture.FillCircle(joint.x, joint.y, half, Color::kJoint);
  }
  return true;
}

}  // namespace asyncrl
