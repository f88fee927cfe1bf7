// LunarLander: Gymnasium's LunarLander-v2 (four discrete actions) and
// LunarLanderContinuous-v2 (two throttles) on Box2D 2.4: the same terrain,
// lander, legs, engines, wind, reward and termination.
#ifndef ASYNCRL_ENVS_BOX2D_LUNAR_LANDER_H_
#define ASYNCRL_ENVS_BOX2D_LUNAR_LANDER_H_

#include <array>
#include <memory>
#include <optional>
#include <string>

#include "asyncrl/envs/env.h"
#include "asyncrl/misc/rng.h"

// Box2D stays out of this header: only lunar_lander.cc needs its headers.
class b2Body;
class b2World;

namespace asyncrl {

class ContactFlags;  // envs/box2d/contacts.h

// A lander starts at the top centre of the screen with a random push and
// must come to rest on the pad between the two flags at (0, 0) of the
// observation's coordinates.
//
// Observation (8 floats): x and y relative to the pad, scaled; the
// velocities, scaled; the angle (radians, not wrapped); the angular
// velocity, scaled; one 0/1 flag per leg touching the ground. Its Box is
// v2's (+-1.5, +-5, +-pi, +-5, [0, 1]); as in Gymnasium, values are not
// clipped to it, and y often starts above 1.5 after an upward push (v3
// widened the box to +-2.5, +-10, +-2 pi for that). Actions: Discrete(4)
// (nothing, left engine, main engine, right engine) or, continuous, Box(-1, 1,
// (2,)) = (main, lateral) throttles. Reward: the change in a shaping of
// distance, speed, tilt and leg contact, less 0.3 a frame of full main engine
// and 0.03 of a side engine; -100 and the end on a crash (the hull touches the
// ground) or leaving |x| >= 1, +100 and the end when the lander comes to rest
// (Box2D puts it to sleep). The registry adds the 1000-step limit. Parameters
// (Gymnasium's argument names): gravity, enable_wind, wind_power,
// turbulence_power.
//
// Gymnasium also creates flame particles (small bodies that collide only
// with the static ground) when it renders; they cannot touch the lander and
// draw no random numbers, so they never change an episode, and this class
// leaves them out.
//
// Each instance owns its Box2D world; not thread-safe, like every Env.
class LunarLander : public Env {
 public:
  explicit LunarLander(bool continuous);
  ~LunarLander() override;

  std::string Name() const override {
    return continuous_ ? "LunarLanderContinuous" : "LunarLander";
  }
  const Space& ObservationSpace() const override { return observation_space_; }
  const Space& ActionSpace() const override { return action_space_; }
  // As Gymnasium draws it (render_mode="rgb_array"), 600x400 at 50 frames a
  // second, without the engines' particles.
  bool Render(Picture& picture) const override;

  static constexpr int kFps = 50;
  static constexpr double kScale = 30.0;  // Pixels per Box2D unit.
  static constexpr int kViewportWidth = 600;
  static constexpr int kViewportHeight = 400;
  static constexpr int kChunks = 11;  // Terrain points across the screen.

  // The lander's centre in Box2D units (x from the left edge, y up from the
  // bottom of the screen), its angle (radians) and whether Box2D keeps it
  // awake. Valid after the first Reset.
  std::array<double, 2> LanderPosition() const;
  double LanderAngle() const;
  bool LanderAwake() const;
  // Whether leg 0 (Gymnasium's legs[0], on the lander's +x side) or leg 1
  // (-x side) touches the ground now, as observation[6] and [7] say.
  bool LegContact(int leg) const { return legs_[leg].ground_contact; }
  // Whether the hull has touched the ground this episode.
  bool game_over() const { return game_over_; }
  // The pad between the flags, in Box2D units.
  double helipad_x1() const { return helipad_x1_; }
  double helipad_x2() const { return helipad_x2_; }
  double helipad_y() const { return helipad_y_; }

 protected:
  FloatView DoReset(std::optional<uint64_t> seed) override;
  StepResult DoStep(const Action& action) override;

 private:
  // What the action asks of the engines: main throttle in {0} or [0.5, 1],
  // side throttle in {0} or [0.5, 1], side direction -1 (left) or +1.
  struct Engines {
    double main_power = 0;
    double side_power = 0;
    double side_direction = 0;
  };
  struct Leg {
    b2Body* body = nullptr;  // Owned by world_.
    bool ground_contact = false;
  };

  Engines Decode(const Action& action) const;
  // One frame: wind, engine impulses, the Box2D step, observation, reward.
  StepResult Advance(const Engines& engines);
  // Advance's parts: wind and turbulence while no leg touches the ground;
  // the engines' impulses, jittered by the frame's dispersion draws.
  void ApplyWind();
  void FireEngines(const Engines& engines);
  void BuildWorld();
  // BuildWorld's parts: the moon's surface and pad, the lander's hull (and
  // its initial push, the wind's phases), leg k (0 left, 1 right) and its
  // joint.
  void BuildTerrain();
  void BuildLander();
  void BuildLeg(int k);

  bool continuous_;
  Space observation_space_;
  Space action_space_;
  Rng rng_;

  // Parameters (from the next Reset on).
  double gravity_ = -10.0;
  double enable_wind_ = 0;
  double wind_power_ = 15.0;
  double turbulence_power_ = 1.5;

  // Declared before world_ so that the world, which calls it, goes first.
  std::unique_ptr<ContactFlags> contact_flags_;
  std::unique_ptr<b2World> world_;
  b2Body* lander_ = nullptr;  // Owned by world_.
  std::array<Leg, 2> legs_{};
  bool game_over_ = false;
  std::optional<double> prev_shaping_;
  double wind_idx_ = 0;
  double torque_idx_ = 0;
  double helipad_x1_ = 0;
  double helipad_x2_ = 0;
  double helipad_y_ = 0;
  // The terrain's points (Box2D units), for drawing the sky above them.
  std::array<double, kChunks> chunk_x_{};
  std::array<double, kChunks> smooth_y_{};
  std::array<float, 8> obs_{};
};

// LunarLander-v2 (continuous = false) or LunarLanderContinuous-v2, without
// the time limit.
std::unique_ptr<Env> MakeLunarLander(bool continuous);

}  // namespace asyncrl

#endif  // ASYNCRL_ENVS_BOX2D_LUNAR_LANDER_H_
