#include "asyncrl/envs/box2d/lunar_lander.h"

#include <box2d/box2d.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>
#include <vector>

#include "asyncrl/envs/box2d/contacts.h"
#include "asyncrl/misc/picture.h"

namespace asyncrl {
namespace {

constexpr double kPi = 3.14159265358979323846;
// The screen in Box2D units.
constexpr double kWidth = LunarLander::kViewportWidth / LunarLander::kScale;
constexpr double kHeight = LunarLander::kViewportHeight / LunarLander::kScale;
// Where the lander starts: the top centre.
constexpr double kInitialX = kWidth / 2;
constexpr double kInitialY = kHeight;

constexpr double kMainEnginePower = 13.0;
constexpr double kSideEnginePower = 0.6;
constexpr double kInitialRandom = 1000.0;  // Largest initial force, each axis.

// The hull's outline in pixels (divided by kScale for Box2D).
constexpr std::array<std::pair<double, double>, 6> kLanderPoly = {
    {{-14, 17}, {-17, 0}, {-17, -10}, {17, -10}, {17, 0}, {14, 17}}};
constexpr double kLegAway = 20;
constexpr double kLegDown = 18;
constexpr double kLegW = 2;
constexpr double kLegH = 8;
constexpr double kLegSpringTorque = 40;

constexpr double kSideEngineHeight = 14;
constexpr double kSideEngineAway = 12;
constexpr double kMainEngineYLocation = 4;
// Gymnasium places the side engines' impulse kSideEngineX across the hull
// but kSideEngineHeight up it, so their torque depends on the angle; kept.
constexpr double kSideEngineX = 17;

constexpr uint16 kGroundCategory = 0x0001;
constexpr uint16 kLanderCategory = 0x0010;
constexpr uint16 kLegCategory = 0x0020;

constexpr float kTimeStep = 1.0F / LunarLander::kFps;
constexpr int kVelocityIterations = 6 * 30;
constexpr int kPositionIterations = 2 * 30;

// Gymnasium's tanh(sin(2 k t) + sin(pi k t)) with k = 0.01: never periodic.
double WindShape(double t) {
  return std::tanh(std::sin(0.02 * t) + std::sin(kPi * 0.01 * t));
}

// An integer in [low, high), as numpy's Generator.integers(low, high).
double UniformInteger(Rng& rng, int low, int high) {
  return low +
         static_cast<double>(rng.Next() % static_cast<uint64_t>(high - low));
}

}  // namespace

LunarLander::LunarLander(bool continuous)
    : continuous_(continuous),
      observation_space_(Space::Box(
          {8},
          {-1.5F, -1.5F, -5.0F, -5.0F, static_cast<float>(-kPi), -5.0F, 0.0F,
           0.0F},
          {1.5F, 1.5F, 5.0F, 5.0F, static_cast<float>(kPi), 5.0F, 1.0F, 1.0F})),
      action_space_(continuous ? Space::Box({2}, -1.0F, 1.0F)
                               : Space::Discrete(4)),
      contact_flags_(std::make_unique<ContactFlags>(&lander_, &game_over_)) {
  for (Leg& leg : legs_) contact_flags_->Watch(&leg.body, &leg.ground_contact);
  DeclareParameter("gravity", -12.0, 0.0,
                   "the moon's gravity along y (Box2D units/s^2; Gymnasium "
                   "requires -12 < gravity < 0)",
                   &gravity_);
  DeclareParameter("enable_wind", 0, 1,
                   "1: wind and turbulence push the lander while no leg "
                   "touches the ground",
                   &enable_wind_, /*integer=*/true);
  DeclareParameter("wind_power", 0.0, 20.0,
                   "the largest sideways wind force (with enable_wind)",
                   &wind_power_);
  DeclareParameter("turbulence_power", 0.0, 2.0,
                   "the largest turbulence torque (with enable_wind)",
                   &turbulence_power_);
}

LunarLander::~LunarLander() = default;

std::array<double, 2> LunarLander::LanderPosition() const {
  const b2Vec2& p = lander_->GetPosition();
  return {p.x, p.y};
}

double LunarLander::LanderAngle() const { return lander_->GetAngle(); }

bool LunarLander::LanderAwake() const { return lander_->IsAwake(); }

void LunarLander::BuildWorld() {
  // A new world rather than emptying the old one: nothing of the previous
  // episode (contacts, broad-phase order, warm starts) can carry over.
  world_.reset();
  lander_ = nullptr;
  legs_ = {};
  world_ =
      std::make_unique<b2World>(b2Vec2(0.0F, static_cast<float>(gravity_)));
  world_->SetContactListener(contact_flags_.get());
  game_over_ = false;
  prev_shaping_.reset();
  // The generator's draws in Gymnasium's order: terrain, push, wind.
  BuildTerrain();
  BuildLander();
  for (int k = 0; k < 2; ++k) BuildLeg(k);
}

void LunarLander::BuildTerrain() {
  // Random heights, flattened under the pad, smoothed over three
  // neighbours (the first one's left neighbour is the spare last height, as
  // Python's height[-1]).
  std::array<double, kChunks + 1> height{};
  for (double& h : height) h = rng_.Uniform(0.0, kHeight / 2);
  for (int i = 0; i < kChunks; ++i) chunk_x_[i] = kWidth / (kChunks - 1) * i;
  helipad_x1_ = chunk_x_[kChunks / 2 - 1];
  helipad_x2_ = chunk_x_[kChunks / 2 + 1];
  helipad_y_ = kHeight / 4;
  for (int i = kChunks / 2 - 2; i <= kChunks / 2 + 2; ++i) {
    height[i] = helipad_y_;
  }
  for (int i = 0; i < kChunks; ++i) {
    const double left = height[i == 0 ? kChunks : i - 1];
    smooth_y_[i] = 0.33 * (left + height[i] + height[i + 1]);
  }

  b2BodyDef moon_def;
  b2Body* moon = world_->CreateBody(&moon_def);
  b2EdgeShape floor;
  floor.SetTwoSided(b2Vec2(0.0F, 0.0F),
                    b2Vec2(static_cast<float>(kWidth), 0.0F));
  b2FixtureDef floor_def;  // Box2D's defaults, as pybox2d's shapes= gives.
  floor_def.shape = &floor;
  moon->CreateFixture(&floor_def);
  for (int i = 0; i < kChunks - 1; ++i) {
    b2EdgeShape edge;
    edge.SetTwoSided(b2Vec2(static_cast<float>(chunk_x_[i]),
                            static_cast<float>(smooth_y_[i])),
                     b2Vec2(static_cast<float>(chunk_x_[i + 1]),
                            static_cast<float>(smooth_y_[i + 1])));
    b2FixtureDef edge_def;
    edge_def.shape = &edge;
    edge_def.density = 0.0F;
    edge_def.friction = 0.1F;
    moon->CreateFixture(&edge_def);
  }
}

void LunarLander::BuildLander() {
  b2BodyDef lander_def;
  lander_def.type = b2_dynamicBody;
  lander_def.position.Set(static_cast<float>(kInitialX),
                          static_cast<float>(kInitialY));
  lander_def.angle = 0.0F;
  lander_ = world_->CreateBody(&lander_def);
  std::array<b2Vec2, kLanderPoly.size()> hull;
  for (size_t i = 0; i < kLanderPoly.size(); ++i) {
    hull[i].Set(static_cast<float>(kLanderPoly[i].first / kScale),
                static_cast<float>(kLanderPoly[i].second / kScale));
  }
  b2PolygonShape hull_shape;
  hull_shape.Set(hull.data(), static_cast<int32>(hull.size()));
  b2FixtureDef hull_def;
  hull_def.shape = &hull_shape;
  hull_def.density = 5.0F;
  hull_def.friction = 0.1F;
  hull_def.restitution = 0.0F;
  hull_def.filter.categoryBits = kLanderCategory;
  hull_def.filter.maskBits = kGroundCategory;
  lander_->CreateFixture(&hull_def);

  const double force_x = rng_.Uniform(-kInitialRandom, kInitialRandom);
  const double force_y = rng_.Uniform(-kInitialRandom, kInitialRandom);
  lander_->ApplyForceToCenter(
      b2Vec2(static_cast<float>(force_x), static_cast<float>(force_y)), true);

  if (enable_wind_ != 0) {
    wind_idx_ = UniformInteger(rng_, -9999, 9999);
    torque_idx_ = UniformInteger(rng_, -9999, 9999);
  }
}

void LunarLander::BuildLeg(int k) {
  const double i = k == 0 ? -1.0 : 1.0;
  b2BodyDef leg_def;
  leg_def.type = b2_dynamicBody;
  leg_def.position.Set(static_cast<float>(kInitialX - i * kLegAway / kScale),
                       static_cast<float>(kInitialY));
  leg_def.angle = static_cast<float>(i * 0.05);
  b2Body* leg = world_->CreateBody(&leg_def);
  b2PolygonShape box;
  box.SetAsBox(static_cast<float>(kLegW / kScale),
               static_cast<float>(kLegH / kScale));
  b2FixtureDef box_def;  // Friction stays Box2D's default 0.2.
  box_def.shape = &box;
  box_def.density = 1.0F;
  box_def.restitution = 0.0F;
  box_def.filter.categoryBits = kLegCategory;
  box_def.filter.maskBits = kGroundCategory;
  leg->CreateFixture(&box_def);
  legs_[k].body = leg;

  b2RevoluteJointDef joint;
  joint.bodyA = lander_;
  joint.bodyB = leg;
  joint.localAnchorA.Set(0.0F, 0.0F);
  joint.localAnchorB.Set(static_cast<float>(i * kLegAway / kScale),
                         static_cast<float>(kLegDown / kScale));
  // pybox2d's joint definition, given both bodies, takes their angle
  // difference as the reference angle (Box2D's own default is 0); the
  // limits below are relative to it.
  joint.referenceAngle = leg->GetAngle() - lander_->GetAngle();
  joint.enableMotor = true;
  joint.enableLimit = true;
  joint.maxMotorTorque = static_cast<float>(kLegSpringTorque);
  // Slow enough that a leg's spring does not throw the lander back up.
  joint.motorSpeed = static_cast<float>(0.3 * i);
  if (k == 0) {
    joint.lowerAngle = static_cast<float>(0.9 - 0.5);
    joint.upperAngle = 0.9F;
  } else {
    joint.lowerAngle = -0.9F;
    joint.upperAngle = static_cast<float>(-0.9 + 0.5);
  }
  world_->CreateJoint(&joint);
}

FloatView LunarLander::DoReset(std::optional<uint64_t> seed) {
  if (seed) rng_.Seed(*seed);
  BuildWorld();
  // As Gymnasium, the first observation comes from one frame with the
  // engines off, which also sets the shaping the first reward starts from.
  return Advance(Engines{}).observation;
}

LunarLander::Engines LunarLander::Decode(const Action& action) const {
  Engines engines;
  if (!continuous_) {
    if (action.index == 2) engines.main_power = 1.0;
    if (action.index == 1 || action.index == 3) {
      engines.side_power = 1.0;
      engines.side_direction = static_cast<double>(action.index - 2);
    }
    return engines;
  }
  const double main =
      std::clamp(static_cast<double>(action.values[0]), -1.0, 1.0);
  const double lateral =
      std::clamp(static_cast<double>(action.values[1]), -1.0, 1.0);
  if (main > 0.0) engines.main_power = (std::clamp(main, 0.0, 1.0) + 1.0) * 0.5;
  if (std::abs(lateral) > 0.5) {
    engines.side_direction = lateral > 0 ? 1.0 : -1.0;
    engines.side_power = std::clamp(std::abs(lateral), 0.5, 1.0);
  }
  return engines;
}

StepResult LunarLander::DoStep(const Action& action) {
  return Advance(Decode(action));
}

void LunarLander::ApplyWind() {
  if (enable_wind_ != 0 && !legs_[0].ground_contact &&
      !legs_[1].ground_contact) {
    const double wind = WindShape(wind_idx_) * wind_power_;
    wind_idx_ += 1;
    lander_->ApplyForceToCenter(b2Vec2(static_cast<float>(wind), 0.0F), true);
    const double torque = WindShape(torque_idx_) * turbulence_power_;
    torque_idx_ += 1;
    lander_->ApplyTorque(static_cast<float>(torque), true);
  }
}

void LunarLander::FireEngines(const Engines& engines) {
  // The hull's up axis (tip) and the axis across it (side).
  const double angle = lander_->GetAngle();
  const std::array<double, 2> tip = {std::sin(angle), std::cos(angle)};
  const std::array<double, 2> side = {-tip[1], tip[0]};
  // Drawn every frame, engines on or off, as Gymnasium does.
  std::array<double, 2> dispersion{};
  for (double& d : dispersion) d = rng_.Uniform(-1.0, 1.0) / kScale;
  const b2Vec2 position = lander_->GetPosition();

  auto push = [this](double ox, double oy, double power, double px, double py) {
    lander_->ApplyLinearImpulse(
        b2Vec2(static_cast<float>(-ox * power),
               static_cast<float>(-oy * power)),
        b2Vec2(static_cast<float>(px), static_cast<float>(py)), true);
  };
  if (engines.main_power > 0) {
    // Just below the centre, jittered along and across the hull.
    const double along = kMainEngineYLocation / kScale + 2 * dispersion[0];
    const double ox = tip[0] * along + side[0] * dispersion[1];
    const double oy = -tip[1] * along - side[1] * dispersion[1];
    push(ox, oy, kMainEnginePower * engines.main_power, position.x + ox,
         position.y + oy);
  }
  if (engines.side_power > 0) {
    const double across =
        3 * dispersion[1] + engines.side_direction * kSideEngineAway / kScale;
    const double ox = tip[0] * dispersion[0] + side[0] * across;
    const double oy = -tip[1] * dispersion[0] - side[1] * across;
    push(ox, oy, kSideEnginePower * engines.side_power,
         position.x + ox - tip[0] * kSideEngineX / kScale,
         position.y + oy + tip[1] * kSideEngineHeight / kScale);
  }
}

StepResult LunarLander::Advance(const Engines& engines) {
  ApplyWind();
  FireEngines(engines);
  world_->Step(kTimeStep, kVelocityIterations, kPositionIterations);

  const b2Vec2& pos = lander_->GetPosition();
  const b2Vec2& vel = lander_->GetLinearVelocity();
  const std::array<double, 8> state = {
      (pos.x - kWidth / 2) / (kWidth / 2),
      (pos.y - (helipad_y_ + kLegDown / kScale)) / (kHeight / 2),
      vel.x * (kWidth / 2) / kFps,
      vel.y * (kHeight / 2) / kFps,
      lander_->GetAngle(),
      20.0 * lander_->GetAngularVelocity() / kFps,
      legs_[0].ground_contact ? 1.0 : 0.0,
      legs_[1].ground_contact ? 1.0 : 0.0};
  for (size_t i = 0; i < state.size(); ++i) {
    obs_[i] = static_cast<float>(state[i]);
  }

  // Ten points for each leg down, so lifting a leg again costs them back.
  const double shaping = -100 * std::hypot(state[0], state[1]) -
                         100 * std::hypot(state[2], state[3]) -
                         100 * std::abs(state[4]) + 10 * state[6] +
                         10 * state[7];
  StepResult result;
  if (prev_shaping_) result.reward = shaping - *prev_shaping_;
  prev_shaping_ = shaping;
  result.reward -= engines.main_power * 0.30;
  result.reward -= engines.side_power * 0.03;
  if (game_over_ || std::abs(state[0]) >= 1.0) {
    result.terminated = true;
    result.reward = -100;
  }
  if (!lander_->IsAwake()) {
    result.terminated = true;
    result.reward = 100;
  }
  result.observation =
      FloatView{obs_.data(), static_cast<int64_t>(obs_.size())};
  return result;
}

// Gymnasium's render(): black sky above the terrain on a white ground, the
// hull and legs, the pad's flags; the engines' particles are left out (see
// lunar_lander.h: this environment never creates them).
bool LunarLander::Render(Picture& picture) const {
  picture.Reset(kViewportWidth, kViewportHeight, Color::kWhite);
  picture.fps = kFps;
  auto pixel = [&picture](double x, double y) {
    return picture.Up(x * kScale, y * kScale);
  };
  for (int i = 0; i + 1 < kChunks; ++i) {
    picture.FillPolygon(
        {pixel(chunk_x_[i], smooth_y_[i]),
         pixel(chunk_x_[i + 1], smooth_y_[i + 1]),
         pixel(chunk_x_[i + 1], kHeight), pixel(chunk_x_[i], kHeight)},
        Color::kBlack);
  }
  if (lander_ == nullptr) return true;
  // Gymnasium's hull and legs are (128, 102, 230); kAxle is the nearest.
  for (const b2Body* body : {lander_, legs_[0].body, legs_[1].body}) {
    for (const b2Fixture* f = body->GetFixtureList(); f != nullptr;
         f = f->GetNext()) {
      const auto* shape = static_cast<const b2PolygonShape*>(f->GetShape());
      std::vector<Picture::Point> points;
      for (int32 v = 0; v < shape->m_count; ++v) {
        const b2Vec2 p = body->GetWorldPoint(shape->m_vertices[v]);
        points.push_back(pixel(p.x, p.y));
      }
      picture.FillPolygon(points, Color::kAxle);
    }
  }
  for (const double x : {helipad_x1_ * kScale, helipad_x2_ * kScale}) {
    const double flag_y1 = helipad_y_ * kScale;
    const double flag_y2 = flag_y1 + 50;
    const Picture::Point bottom = picture.Up(x, flag_y1);
    const Picture::Point top = picture.Up(x, flag_y2);
    picture.Line(bottom.x, bottom.y, top.x, top.y, 1, Color::kWhite);
    picture.FillPolygon({picture.Up(x, flag_y2), picture.Up(x, flag_y2 - 10),
                         picture.Up(x + 25, flag_y2 - 5)},
                        Color::kJoint);
  }
  return true;
}

std::unique_ptr<Env> MakeLunarLander(bool continuous) {
  return std::make_unique<LunarLander>(continuous);
}

}  // namespace asyncrl
