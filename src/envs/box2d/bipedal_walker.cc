#include "asyncrl/envs/box2d/bipedal_walker.h"

#include <box2d/box2d.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "asyncrl/envs/box2d/contacts.h"
#include "asyncrl/misc/picture.h"

namespace asyncrl {
namespace {

constexpr double kPi = 3.14159265358979323846;
// HULL_POLY, in pixels (divided by SCALE into metres).
constexpr std::array<std::array<double, 2>, 5> kHullPoly = {
    {{-30, 9}, {6, 9}, {34, 1}, {34, -8}, {-30, -8}}};
// The ground collides with everything and is what the lidar sees; the
// walker's parts collide only with the ground.
constexpr uint16 kGroundCategory = 0x0001;
constexpr uint16 kWalkerCategory = 0x0020;
constexpr std::array<double, 4> kMotorSpeeds = {
    BipedalWalker::kSpeedHip, BipedalWalker::kSpeedKnee,
    BipedalWalker::kSpeedHip, BipedalWalker::kSpeedKnee};

b2Vec2 ToB2(double x, double y) {
  return {static_cast<float>(x), static_cast<float>(y)};
}

// numpy's sign: 0 for 0.
double Sign(double x) {
  if (x > 0) return 1.0;
  return x < 0 ? -1.0 : 0.0;
}

Space MakeObservationSpace() {
  // Gymnasium's bounds: 5 stands for five times the rated speed, which
  // impulses from ground contact may reach.
  const auto pi = static_cast<float>(kPi);
  std::vector<float> low = {-pi, -5, -5,  -5, -pi, -5, -pi,
                            -5,  0,  -pi, -5, -pi, -5, 0};
  std::vector<float> high = {pi, 5, 5, 5, pi, 5, pi, 5, 5, pi, 5, pi, 5, 5};
  low.resize(BipedalWalker::kObsSize, -1.0F);
  high.resize(BipedalWalker::kObsSize, 1.0F);
  return Space::Box({BipedalWalker::kObsSize}, std::move(low), std::move(high));
}

}  // namespace

namespace {

// Gymnasium's LidarCallback: the closest ground fixture along the ray (the
// walker's own parts are not seen).
class LidarCallback : public b2RayCastCallback {
 public:
  LidarCallback(double* fraction, BipedalWalker::Vec* p2)
      : fraction_(fraction), p2_(p2) {}

  float ReportFixture(b2Fixture* fixture, const b2Vec2& point,
                      const b2Vec2& normal, float fraction) override {
    static_cast<void>(normal);
    if ((fixture->GetFilterData().categoryBits & kGroundCategory) == 0) {
      return -1;
    }
    *p2_ = {point.x, point.y};
    *fraction_ = fraction;
    return fraction;
  }

 private:
  double* fraction_;
  BipedalWalker::Vec* p2_;
};

}  // namespace

BipedalWalker::BipedalWalker(bool hardcore)
    : observation_space_(MakeObservationSpace()),
      action_space_(Space::Box({4}, -1.0F, 1.0F)),
      hardcore_param_(hardcore ? 1.0 : 0.0),
      contact_flags_(std::make_unique<ContactFlags>(&hull_, &game_over_)) {
  // The lower legs report whether they touch the ground.
  for (size_t leg : {1, 3}) {
    contact_flags_->Watch(&legs_[leg], &ground_contact_[leg]);
  }
  DeclareParameter("hardcore", 0, 1,
                   "1: terrain with stumps, stairs and pits (Gymnasium's "
                   "hardcore=True); 0: gently uneven grass",
                   &hardcore_param_, /*integer=*/true);
}

BipedalWalker::~BipedalWalker() = default;

BipedalWalker::Vec BipedalWalker::HullPosition() const {
  if (hull_ == nullptr) return {};
  const b2Vec2& p = hull_->GetPosition();
  return {p.x, p.y};
}

double BipedalWalker::HullAngle() const {
  return hull_ == nullptr ? 0.0 : hull_->GetAngle();
}

int64_t BipedalWalker::Integers(int64_t low, int64_t high) {
  return low +
         static_cast<int64_t>(rng_.Uniform() * static_cast<double>(high - low));
}

FloatView BipedalWalker::DoReset(std::optional<uint64_t> seed) {
  if (seed) rng_.Seed(*seed);
  episode_hardcore_ = hardcore_param_ != 0;
  hull_ = nullptr;
  legs_ = {};
  joints_ = {};
  terrain_.clear();
  world_ = std::make_unique<b2World>(b2Vec2(0.0F, -10.0F));
  world_->SetContactListener(contact_flags_.get());
  game_over_ = false;
  ground_contact_ = {};
  prev_shaping_.reset();
  scroll_ = 0;
  lidar_ = {};

  // The generator's draws in Gymnasium's order: terrain, clouds, the push.
  GenerateTerrain(episode_hardcore_);
  GenerateClouds();
  CreateWalker();
  // Gymnasium's reset returns the observation of one step with no torque.
  const FloatView obs = Advance({0, 0, 0, 0}).observation;
  frames_ = 0;
  return obs;
}

void BipedalWalker::AddObstacle(const std::array<Vec, 4>& poly) {
  b2BodyDef def;  // Static at the origin.
  b2Body* body = world_->CreateBody(&def);
  std::array<b2Vec2, 4> vertices;
  for (size_t i = 0; i < poly.size(); ++i) {
    vertices[i] = ToB2(poly[i].x, poly[i].y);
  }
  b2PolygonShape shape;
  shape.Set(vertices.data(), static_cast<int32>(vertices.size()));
  b2FixtureDef fixture;
  fixture.shape = &shape;
  fixture.friction = static_cast<float>(kFriction);
  body->CreateFixture(&fixture);
  terrain_.push_back(body);
}

void BipedalWalker::GenerateTerrain(bool hardcore) {
  enum State { kGrass, kStump, kStairs, kPit, kStates };
  int64_t state = kGrass;
  double velocity = 0.0;
  double y = kTerrainHeight;
  int64_t counter = kTerrainStartpad;
  bool oneshot = false;
  terrain_x_.clear();
  terrain_y_.clear();

  int64_t stair_steps = 0, stair_width = 0, stair_height = 0;
  double original_y = 0;
  for (int i = 0; i < kTerrainLength; ++i) {
    const double x = i * kTerrainStep;
    terrain_x_.push_back(x);

    if (state == kGrass && !oneshot) {
      velocity = 0.8 * velocity + 0.01 * Sign(kTerrainHeight - y);
      if (i > kTerrainStartpad) velocity += rng_.Uniform(-1, 1) / kScale;
      y += velocity;
    } else if (state == kPit && oneshot) {
      counter = Integers(3, 5);
      std::array<Vec, 4> poly = {{{x, y},
                                  {x + kTerrainStep, y},
                                  {x + kTerrainStep, y - 4 * kTerrainStep},
                                  {x, y - 4 * kTerrainStep}}};
      AddObstacle(poly);
      for (Vec& p : poly) p.x += kTerrainStep * static_cast<double>(counter);
      AddObstacle(poly);
      counter += 2;
      original_y = y;
    } else if (state == kPit && !oneshot) {
      y = original_y;
      if (counter > 1) y -= 4 * kTerrainStep;
    } else if (state == kStump && oneshot) {
      counter = Integers(1, 3);
      const double size = static_cast<double>(counter) * kTerrainStep;
      AddObstacle(
          {{{x, y}, {x + size, y}, {x + size, y + size}, {x, y + size}}});
    } else if (state == kStairs && oneshot) {
      stair_height = rng_.Uniform() > 0.5 ? 1 : -1;
      stair_width = Integers(4, 5);
      stair_steps = Integers(3, 5);
      original_y = y;
      for (int64_t s = 0; s < stair_steps; ++s) {
        const double left =
            x + static_cast<double>(s * stair_width) * kTerrainStep;
        const double right =
            x + static_cast<double>((1 + s) * stair_width) * kTerrainStep;
        const double top =
            y + static_cast<double>(s * stair_height) * kTerrainStep;
        const double bottom =
            y + static_cast<double>(-1 + s * stair_height) * kTerrainStep;
        AddObstacle(
            {{{left, top}, {right, top}, {right, bottom}, {left, bottom}}});
      }
      counter = stair_steps * stair_width;
    } else if (state == kStairs && !oneshot) {
      const double s = static_cast<double>(stair_steps * stair_width - counter -
                                           stair_height);
      const double n = s / static_cast<double>(stair_width);
      y = original_y + (n * static_cast<double>(stair_height)) * kTerrainStep;
    }

    oneshot = false;
    terrain_y_.push_back(y);
    --counter;
    if (counter == 0) {
      counter = Integers(kTerrainGrass / 2, kTerrainGrass);
      if (state == kGrass && hardcore) {
        state = Integers(1, kStates);
      } else {
        state = kGrass;
      }
      oneshot = true;
    }
  }

  AddGroundEdges();
}

void BipedalWalker::AddGroundEdges() {
  for (int i = 0; i + 1 < kTerrainLength; ++i) {
    b2BodyDef def;
    b2Body* body = world_->CreateBody(&def);
    b2EdgeShape shape;
    shape.SetTwoSided(ToB2(terrain_x_[i], terrain_y_[i]),
                      ToB2(terrain_x_[i + 1], terrain_y_[i + 1]));
    b2FixtureDef fixture;
    fixture.shape = &shape;
    fixture.friction = static_cast<float>(kFriction);
    fixture.filter.categoryBits = kGroundCategory;
    body->CreateFixture(&fixture);
    terrain_.push_back(body);
  }
  // Gymnasium draws the terrain list reversed: the edges, then the
  // obstacles on top.
  std::reverse(terrain_.begin(), terrain_.end());
}

void BipedalWalker::GenerateClouds() {
  clouds_.clear();
  for (int c = 0; c < kTerrainLength / 20; ++c) {
    const double x = rng_.Uniform(0, kTerrainLength) * kTerrainStep;
    const double y = kViewportH / kScale * 3 / 4;
    Cloud cloud;
    for (int a = 0; a < 5; ++a) {
      // Gymnasium's 3.14, not pi.
      const double px = x + 15 * kTerrainStep * std::sin(3.14 * 2 * a / 5) +
                        rng_.Uniform(0, 5 * kTerrainStep);
      const double py = y + 5 * kTerrainStep * std::cos(3.14 * 2 * a / 5) +
                        rng_.Uniform(0, 5 * kTerrainStep);
      cloud.poly.push_back({px, py});
    }
    cloud.x1 = cloud.x2 = cloud.poly[0].x;
    for (const Vec& p : cloud.poly) {
      cloud.x1 = std::min(cloud.x1, p.x);
      cloud.x2 = std::max(cloud.x2, p.x);
    }
    clouds_.push_back(std::move(cloud));
  }
}

void BipedalWalker::CreateWalker() {
  const double init_x = kTerrainStep * kTerrainStartpad / 2;
  const double init_y = kTerrainHeight + 2 * kLegH;

  b2BodyDef hull_def;
  hull_def.type = b2_dynamicBody;
  hull_def.position = ToB2(init_x, init_y);
  hull_ = world_->CreateBody(&hull_def);
  std::array<b2Vec2, kHullPoly.size()> hull_vertices;
  for (size_t i = 0; i < kHullPoly.size(); ++i) {
    hull_vertices[i] = ToB2(kHullPoly[i][0] / kScale, kHullPoly[i][1] / kScale);
  }
  b2PolygonShape hull_shape;
  hull_shape.Set(hull_vertices.data(),
                 static_cast<int32>(hull_vertices.size()));
  b2FixtureDef hull_fixture;
  hull_fixture.shape = &hull_shape;
  hull_fixture.density = 5.0F;
  hull_fixture.friction = 0.1F;
  hull_fixture.restitution = 0.0F;
  hull_fixture.filter.categoryBits = kWalkerCategory;
  hull_fixture.filter.maskBits = kGroundCategory;
  hull_->CreateFixture(&hull_fixture);
  hull_->ApplyForceToCenter(
      ToB2(rng_.Uniform(-kInitialRandom, kInitialRandom), 0), true);

  // LEG_FD and LOWER_FD: Box2D's default friction (0.2), as Gymnasium's.
  auto make_part = [&](double x, double y, double angle, double half_width) {
    b2BodyDef def;
    def.type = b2_dynamicBody;
    def.position = ToB2(x, y);
    def.angle = static_cast<float>(angle);
    b2Body* body = world_->CreateBody(&def);
    b2PolygonShape shape;
    shape.SetAsBox(static_cast<float>(half_width),
                   static_cast<float>(kLegH / 2));
    b2FixtureDef fixture;
    fixture.shape = &shape;
    fixture.density = 1.0F;
    fixture.restitution = 0.0F;
    fixture.filter.categoryBits = kWalkerCategory;
    fixture.filter.maskBits = kGroundCategory;
    body->CreateFixture(&fixture);
    return body;
  };
  // pybox2d's revoluteJointDef sets referenceAngle = bodyB.angle -
  // bodyA.angle when it is not given, so both joints start at angle 0.
  auto make_joint = [&](b2Body* a, b2Body* b, double anchor_a_y,
                        double motor_speed, double lower, double upper) {
    b2RevoluteJointDef def;
    def.bodyA = a;
    def.bodyB = b;
    def.localAnchorA = ToB2(0, anchor_a_y);
    def.localAnchorB = ToB2(0, kLegH / 2);
    def.referenceAngle = b->GetAngle() - a->GetAngle();
    def.enableMotor = true;
    def.enableLimit = true;
    def.maxMotorTorque = static_cast<float>(kMotorsTorque);
    def.motorSpeed = static_cast<float>(motor_speed);
    def.lowerAngle = static_cast<float>(lower);
    def.upperAngle = static_cast<float>(upper);
    return static_cast<b2RevoluteJoint*>(world_->CreateJoint(&def));
  };

  size_t k = 0;
  for (int i : {-1, +1}) {
    b2Body* leg =
        make_part(init_x, init_y - kLegH / 2 - kLegDown, i * 0.05, kLegW / 2);
    legs_[k] = leg;
    joints_[k] = make_joint(hull_, leg, kLegDown, i, -0.8, 1.1);
    ++k;
    b2Body* lower = make_part(init_x, init_y - kLegH * 3 / 2 - kLegDown,
                              i * 0.05, 0.8 * kLegW / 2);
    legs_[k] = lower;
    joints_[k] = make_joint(leg, lower, -kLegH / 2, 1, -1.6, -0.1);
    ++k;
  }
}

StepResult BipedalWalker::DoStep(const Action& action) {
  const std::array<float, 4> a = {action.values[0], action.values[1],
                                  action.values[2], action.values[3]};
  StepResult result = Advance(a);
  ++frames_;
  return result;
}

StepResult BipedalWalker::Advance(const std::array<float, 4>& action) {
  for (size_t i = 0; i < joints_.size(); ++i) {
    const double a = action[i];
    joints_[i]->SetMotorSpeed(static_cast<float>(kMotorSpeeds[i] * Sign(a)));
    joints_[i]->SetMaxMotorTorque(
        static_cast<float>(kMotorsTorque * std::clamp(std::fabs(a), 0.0, 1.0)));
  }
  world_->Step(static_cast<float>(1.0 / kFps), 6 * 30, 2 * 30);

  const b2Vec2 pos = hull_->GetPosition();
  const b2Vec2 vel = hull_->GetLinearVelocity();
  for (int i = 0; i < kLidarCount; ++i) {
    Lidar& lidar = lidar_[i];
    lidar.fraction = 1.0;
    lidar.p1 = {pos.x, pos.y};
    lidar.p2 = {pos.x + std::sin(1.5 * i / 10.0) * kLidarRange,
                pos.y - std::cos(1.5 * i / 10.0) * kLidarRange};
    LidarCallback callback(&lidar.fraction, &lidar.p2);
    world_->RayCast(&callback, ToB2(lidar.p1.x, lidar.p1.y),
                    ToB2(lidar.p2.x, lidar.p2.y));
  }

  const double hull_angle = hull_->GetAngle();
  const std::array<double, 14> state = {
      hull_angle,
      2.0 * hull_->GetAngularVelocity() / kFps,
      0.3 * vel.x * (kViewportW / kScale) / kFps,  // About -1..1.
      0.3 * vel.y * (kViewportH / kScale) / kFps,
      joints_[0]->GetJointAngle(),
      joints_[0]->GetJointSpeed() / kSpeedHip,
      joints_[1]->GetJointAngle() + 1.0,
      joints_[1]->GetJointSpeed() / kSpeedKnee,
      ground_contact_[1] ? 1.0 : 0.0,
      joints_[2]->GetJointAngle(),
      joints_[2]->GetJointSpeed() / kSpeedHip,
      joints_[3]->GetJointAngle() + 1.0,
      joints_[3]->GetJointSpeed() / kSpeedKnee,
      ground_contact_[3] ? 1.0 : 0.0};
  for (size_t i = 0; i < state.size(); ++i) {
    obs_[i] = static_cast<float>(state[i]);
  }
  for (size_t i = 0; i < lidar_.size(); ++i) {
    obs_[state.size() + i] = static_cast<float>(lidar_[i].fraction);
  }

  scroll_ = pos.x - kViewportW / kScale / 5;

  // Moving forward earns about 300 over the whole course; keeping the head
  // level is the only other shaping.
  double shaping = 130 * pos.x / kScale;
  shaping -= 5.0 * std::fabs(hull_angle);
  double reward = 0;
  if (prev_shaping_) reward = shaping - *prev_shaping_;
  prev_shaping_ = shaping;
  for (float a : action) {
    reward -= 0.00035 * kMotorsTorque *
              std::clamp(std::fabs(static_cast<double>(a)), 0.0, 1.0);
  }

  StepResult result;
  result.observation = FloatView{obs_.data(), kObsSize};
  if (game_over_ || pos.x < 0) {
    reward = -100;
    result.terminated = true;
  }
  if (pos.x > (kTerrainLength - kTerrainGrass) * kTerrainStep) {
    result.terminated = true;
  }
  result.reward = reward;
  return result;
}

namespace {

// Render's drawing in world coordinates: kScale pixels a metre, the view
// `offset` pixels from the world's left edge.
class WorldCanvas {
 public:
  WorldCanvas(Picture& picture, double offset)
      : picture_(picture), offset_(offset) {}

  Picture::Point ToPixel(double x, double y) const {
    return picture_.Up(x * BipedalWalker::kScale - offset_,
                       y * BipedalWalker::kScale);
  }
  void Fill(const std::vector<Picture::Point>& points, Color color) {
    picture_.FillPolygon(points, color);
  }
  void Outline(const std::vector<Picture::Point>& points, Color color) {
    for (size_t i = 0; i < points.size(); ++i) {
      const Picture::Point& a = points[i];
      const Picture::Point& b = points[(i + 1) % points.size()];
      picture_.Line(a.x, a.y, b.x, b.y, 1, color);
    }
  }
  // A line between two world points, one pixel wide.
  void Line(double x0, double y0, double x1, double y1, Color color) {
    const Picture::Point a = ToPixel(x0, y0);
    const Picture::Point b = ToPixel(x1, y1);
    picture_.Line(a.x, a.y, b.x, b.y, 1, color);
  }
  // A body's fixtures: edges as grass lines, polygons filled and outlined.
  void Body(const b2Body* body, Color fill_color, Color outline_color) {
    const b2Transform& transform = body->GetTransform();
    for (const b2Fixture* f = body->GetFixtureList(); f != nullptr;
         f = f->GetNext()) {
      if (f->GetType() == b2Shape::e_edge) {
        const auto* edge = static_cast<const b2EdgeShape*>(f->GetShape());
        const b2Vec2 a = b2Mul(transform, edge->m_vertex1);
        const b2Vec2 b = b2Mul(transform, edge->m_vertex2);
        Line(a.x, a.y, b.x, b.y, Color::kGrass);
      } else if (f->GetType() == b2Shape::e_polygon) {
        const auto* polygon = static_cast<const b2PolygonShape*>(f->GetShape());
        std::vector<Picture::Point> points;
        for (int32 i = 0; i < polygon->m_count; ++i) {
          const b2Vec2 v = b2Mul(transform, polygon->m_vertices[i]);
          points.push_back(ToPixel(v.x, v.y));
        }
        Fill(points, fill_color);
        Outline(points, outline_color);
      }
    }
  }

 private:
  Picture& picture_;
  double offset_;
};

}  // namespace

// Gymnasium's BipedalWalker.render in rgb_array mode: the world drawn at
// SCALE pixels a metre, the 600 pixels from max(0, scroll) on shown; clouds
// move at half the speed. Outlines are drawn dark grey and the terrain
// line one green (Gymnasium alternates two).
bool BipedalWalker::Render(Picture& picture) const {
  picture.Reset(kViewportW, kViewportH, Color::kBlack);
  picture.fps = kFps;
  const double offset = std::max(0.0, scroll_) * kScale;
  WorldCanvas canvas(picture, offset);
  picture.FillRect(scroll_ * kScale - offset, 0,
                   scroll_ * kScale - offset + kViewportW, kViewportH,
                   Color::kSky);
  if (world_ == nullptr) return true;  // Before the first Reset.

  for (const Cloud& cloud : clouds_) {
    if (cloud.x2 < scroll_ / 2) continue;
    if (cloud.x1 > scroll_ / 2 + kViewportW / kScale) continue;
    std::vector<Picture::Point> points;
    for (const Vec& p : cloud.poly) {
      points.push_back(canvas.ToPixel(p.x + scroll_ / 2, p.y));
    }
    canvas.Fill(points, Color::kWhite);
  }
  for (size_t i = 0; i + 1 < terrain_x_.size(); ++i) {
    if (terrain_x_[i + 1] < scroll_) continue;
    if (terrain_x_[i] > scroll_ + kViewportW / kScale) continue;
    canvas.Fill({canvas.ToPixel(terrain_x_[i], terrain_y_[i]),
                 canvas.ToPixel(terrain_x_[i + 1], terrain_y_[i + 1]),
                 canvas.ToPixel(terrain_x_[i + 1], 0),
                 canvas.ToPixel(terrain_x_[i], 0)},
                Color::kGround);
  }

  // One lidar ray at a time, sweeping out and back every 100 frames.
  const int64_t ray = (frames_ + 1) % 100;
  const int64_t rays = kLidarCount;
  if (ray < 2 * rays) {
    const Lidar& lidar = lidar_[ray < rays ? ray : 2 * rays - 1 - ray];
    canvas.Line(lidar.p1.x, lidar.p1.y, lidar.p2.x, lidar.p2.y, Color::kRed);
  }

  for (const b2Body* body : terrain_) {
    canvas.Body(body, Color::kWhite, Color::kGrey);
  }
  for (size_t i = 0; i < legs_.size(); ++i) {
    canvas.Body(legs_[i], i < 2 ? Color::kLegFar : Color::kLegNear,
                Color::kDarkGrey);
  }
  canvas.Body(hull_, Color::kHull, Color::kDarkGrey);

  // The start flag.
  const double flag_x = kTerrainStep * 3;
  const double flag_y1 = kTerrainHeight;
  const double flag_y2 = flag_y1 + 50 / kScale;
  canvas.Line(flag_x, flag_y1, flag_x, flag_y2, Color::kBlack);
  const std::vector<Picture::Point> flag = {
      canvas.ToPixel(flag_x, flag_y2),
      canvas.ToPixel(flag_x, flag_y2 - 10 / kScale),
      canvas.ToPixel(flag_x + 25 / kScale, flag_y2 - 5 / kScale)};
  canvas.Fill(flag, Color::kRed);
  canvas.Outline(flag, Color::kBlack);
  return true;
}

std::unique_ptr<Env> MakeBipedalWalker(bool hardcore) {
  return std::make_unique<BipedalWalker>(hardcore);
}

}  // namespace asyncrl
