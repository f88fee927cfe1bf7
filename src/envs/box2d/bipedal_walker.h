// BipedalWalker: Gymnasium's BipedalWalker-v3 (and its hardcore terrain of
// stumps, stairs and pits) over Box2D: a four-joint walker driven by motor
// torques across generated terrain, with the same constants, observation,
// reward and drawing as gymnasium/envs/box2d/bipedal_walker.py.
#ifndef ASYNCRL_ENVS_BOX2D_BIPEDAL_WALKER_H_
#define ASYNCRL_ENVS_BOX2D_BIPEDAL_WALKER_H_

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "asyncrl/envs/env.h"
#include "asyncrl/misc/rng.h"

class b2Body;
class b2RevoluteJoint;
class b2World;

namespace asyncrl {

class ContactFlags;  // envs/box2d/contacts.h

// Observation (24 floats): hull angle, 2 * angular velocity / FPS, scaled
// horizontal and vertical velocity, then for each leg the hip angle and
// speed / SPEED_HIP, the knee angle + 1 and speed / SPEED_KNEE and the lower
// leg's ground contact (0/1), then 10 lidar fractions (1: nothing within
// LIDAR_RANGE). Action: four values in [-1, 1] (hip, knee, hip, knee): the
// sign picks the motor's direction at full speed, the magnitude the share of
// MOTORS_TORQUE it may use. Reward: progress 130 * x / SCALE minus 5 * |hull
// angle| as shaping, minus 0.00035 * MOTORS_TORQUE * |a| per joint; -100 and
// the end when the hull touches the ground or walks off the left edge; the
// end also past the far grass. The registry adds the time limit (1600
// steps, 2000 hardcore). Parameter: hardcore (0/1, from the next Reset).
//
// Each instance owns its Box2D world (rebuilt at every Reset); not
// thread-safe, like every Env.
class BipedalWalker : public Env {
 public:
  explicit BipedalWalker(bool hardcore = false);
  ~BipedalWalker() override;

  std::string Name() const override { return "BipedalWalker"; }
  const Space& ObservationSpace() const override { return observation_space_; }
  const Space& ActionSpace() const override { return action_space_; }
  // As Gymnasium draws it (render_mode="rgb_array"): 600x400 at 50 frames a
  // second, the view following the hull.
  bool Render(Picture& picture) const override;

  static constexpr int kFps = 50;
  static constexpr double kScale = 30.0;
  static constexpr double kMotorsTorque = 80.0;
  static constexpr double kSpeedHip = 4.0;
  static constexpr double kSpeedKnee = 6.0;
  static constexpr double kLidarRange = 160.0 / kScale;
  static constexpr double kInitialRandom = 5.0;
  static constexpr double kLegDown = -8.0 / kScale;
  static constexpr double kLegW = 8.0 / kScale;
  static constexpr double kLegH = 34.0 / kScale;
  static constexpr int kViewportW = 600;
  static constexpr int kViewportH = 400;
  static constexpr double kTerrainStep = 14.0 / kScale;
  static constexpr int kTerrainLength = 200;  // In steps.
  static constexpr double kTerrainHeight = kViewportH / kScale / 4;
  static constexpr int kTerrainGrass = 10;     // In steps.
  static constexpr int kTerrainStartpad = 20;  // In steps.
  static constexpr double kFriction = 2.5;
  static constexpr int kLidarCount = 10;
  static constexpr int kObsSize = 24;

  // A point in world coordinates (metres, y up).
  struct Vec {
    double x = 0;
    double y = 0;
  };
  // The hull's position and angle now (valid after the first Reset).
  Vec HullPosition() const;
  double HullAngle() const;
  // Whether the current episode's terrain is the hardcore one.
  bool hardcore() const { return episode_hardcore_; }
  // Whether the hull has touched the ground this episode.
  bool game_over() const { return game_over_; }
  // The terrain's surface, one point per TERRAIN_STEP (kTerrainLength).
  const std::vector<double>& terrain_x() const { return terrain_x_; }
  const std::vector<double>& terrain_y() const { return terrain_y_; }

 protected:
  FloatView DoReset(std::optional<uint64_t> seed) override;
  StepResult DoStep(const Action& action) override;

 private:
  struct Lidar {
    double fraction = 1.0;
    Vec p1, p2;
  };
  struct Cloud {
    std::vector<Vec> poly;
    double x1 = 0, x2 = 0;  // Horizontal extent.
  };

  void GenerateTerrain(bool hardcore);
  void GenerateClouds();
  void CreateWalker();
  // Adds a static terrain polygon (a stump, a stair, a pit wall).
  void AddObstacle(const std::array<Vec, 4>& poly);
  // The ground's edges between the terrain points (GenerateTerrain's last
  // part), listed before the obstacles as Gymnasium draws them.
  void AddGroundEdges();
  // Sets the motors from `action`, advances the world one frame and fills
  // the observation; Reset's step is the one with all zeros.
  StepResult Advance(const std::array<float, 4>& action);
  // Uniform whole number in [low, high), as numpy's Generator.integers.
  int64_t Integers(int64_t low, int64_t high);

  Space observation_space_;
  Space action_space_;
  Rng rng_;
  double hardcore_param_ = 0;  // The declared parameter (0/1).
  bool episode_hardcore_ = false;

  // The listener outlives the world that points to it.
  std::unique_ptr<ContactFlags> contact_flags_;
  std::unique_ptr<b2World> world_;
  b2Body* hull_ = nullptr;         // Bodies and joints are owned by world_.
  std::array<b2Body*, 4> legs_{};  // Upper, lower, upper, lower.
  std::array<b2RevoluteJoint*, 4> joints_{};  // Hip, knee, hip, knee.
  std::array<bool, 4> ground_contact_{};      // Lower legs (1 and 3) only.
  std::vector<b2Body*> terrain_;              // In Gymnasium's drawing order.
  std::vector<double> terrain_x_;
  std::vector<double> terrain_y_;
  std::vector<Cloud> clouds_;
  std::array<Lidar, kLidarCount> lidar_{};

  bool game_over_ = false;
  std::optional<double> prev_shaping_;
  double scroll_ = 0;
  int64_t frames_ = 0;  // Steps since Reset, for the lidar drawn.
  std::array<float, kObsSize> obs_{};
};

// A BipedalWalker; hardcore sets the parameter's default.
std::unique_ptr<Env> MakeBipedalWalker(bool hardcore);

}  // namespace asyncrl

#endif  // ASYNCRL_ENVS_BOX2D_BIPEDAL_WALKER_H_
