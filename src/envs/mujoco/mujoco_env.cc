#include "asyncrl/envs/mujoco/mujoco_env.h"

#include <mujoco/mujoco.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <stdexcept>

#include "asyncrl/misc/picture.h"
#include "asyncrl/misc/strings.h"

namespace asyncrl {
namespace mujoco_models {
// The models of src/envs/mujoco/models by file stem (generated:
// cmake/embed_mujoco_models.cmake).
const std::map<std::string, std::string>& Embedded();
}  // namespace mujoco_models

std::vector<std::string> MujocoModelNames() {
  std::vector<std::string> names;
  for (const auto& [name, xml] : mujoco_models::Embedded()) {
    names.push_back(name);
  }
  return names;
}

const std::string& MujocoModelXml(const std::string& name) {
  const auto& models = mujoco_models::Embedded();
  const auto it = models.find(name);
  if (it == models.end()) {
    throw std::invalid_argument(
        "unknown MuJoCo model '" + name +
        "'; accepted: " + JoinNames(MujocoModelNames()));
  }
  return it->second;
}

namespace {

// The compiled models of this process, by name: compiling Humanoid takes
// milliseconds, and every environment of a worker shares one read-only
// copy.
std::shared_ptr<const mjModel> LoadModel(const std::string& name) {
  static std::mutex mutex;
  static std::map<std::string, std::weak_ptr<const mjModel>> cache;
  const std::lock_guard<std::mutex> lock(mutex);
  if (auto model = cache[name].lock()) return model;

  const std::string& xml = MujocoModelXml(name);
  const std::string file = name + ".xml";
  mjVFS vfs;
  mj_defaultVFS(&vfs);
  if (mj_makeEmptyFileVFS(&vfs, file.c_str(), static_cast<int>(xml.size())) !=
      0) {
    mj_deleteVFS(&vfs);
    throw std::runtime_error("MuJoCo model '" + name +
                             "': cannot make its virtual file");
  }
  const int index = mj_findFileVFS(&vfs, file.c_str());
  std::memcpy(vfs.filedata[index], xml.data(), xml.size());
  char error[1024] = "";
  mjModel* raw = mj_loadXML(file.c_str(), &vfs, error, sizeof(error));
  mj_deleteVFS(&vfs);
  if (raw == nullptr) {
    throw std::runtime_error("MuJoCo model '" + name +
                             "' does not compile: " + error);
  }
  std::shared_ptr<const mjModel> model(
      raw, [](const mjModel* m) { mj_deleteModel(const_cast<mjModel*>(m)); });
  cache[name] = model;
  return model;
}

Space ControlSpace(const mjModel& model) {
  std::vector<float> low(model.nu), high(model.nu);
  for (int i = 0; i < model.nu; ++i) {
    low[i] = static_cast<float>(model.actuator_ctrlrange[2 * i]);
    high[i] = static_cast<float>(model.actuator_ctrlrange[2 * i + 1]);
  }
  return Space::Box({model.nu}, std::move(low), std::move(high));
}

}  // namespace

MujocoEnv::MujocoEnv(
    const std::string& name, int frame_skip,
    const std::function<int(const mjModel_&)>& observation_size)
    : model_(LoadModel(name)),
      frame_skip_(frame_skip),
      observation_space_(Space::Box({observation_size(*model_)},
                                    -std::numeric_limits<float>::infinity(),
                                    std::numeric_limits<float>::infinity())),
      action_space_(ControlSpace(*model_)),
      obs_(observation_space_.FlatSize()) {
  if (frame_skip < 1) {
    throw std::invalid_argument("MuJoCo model '" + name + "': frame_skip " +
                                std::to_string(frame_skip) +
                                " is not a positive integer");
  }
  data_ = mj_makeData(model_.get());
  if (data_ == nullptr) {
    throw std::runtime_error("MuJoCo model '" + name +
                             "': cannot allocate its data");
  }
}

MujocoEnv::~MujocoEnv() { mj_deleteData(data_); }

double MujocoEnv::dt() const { return model_->opt.timestep * frame_skip_; }

void MujocoEnv::SetState(const std::vector<double>& qpos,
                         const std::vector<double>& qvel) {
  if (static_cast<int>(qpos.size()) != model_->nq ||
      static_cast<int>(qvel.size()) != model_->nv) {
    throw std::invalid_argument(
        "SetState: qpos has " + std::to_string(qpos.size()) + " values and " +
        "qvel " + std::to_string(qvel.size()) + "; the model has nq " +
        std::to_string(model_->nq) + " and nv " + std::to_string(model_->nv));
  }
  std::copy(qpos.begin(), qpos.end(), data_->qpos);
  std::copy(qvel.begin(), qvel.end(), data_->qvel);
  mj_forward(model_.get(), data_);
}

void MujocoEnv::ResetWithNoise(double scale, bool normal_velocity) {
  for (int i = 0; i < model_->nq; ++i) {
    data_->qpos[i] = model_->qpos0[i] + rng_.Uniform(-scale, scale);
  }
  for (int i = 0; i < model_->nv; ++i) {
    data_->qvel[i] =
        normal_velocity ? scale * rng_.Normal() : rng_.Uniform(-scale, scale);
  }
  mj_forward(model_.get(), data_);
}

FloatView MujocoEnv::DoReset(std::optional<uint64_t> seed) {
  if (seed) rng_.Seed(*seed);
  mj_resetData(model_.get(), data_);
  ResetModel();
  return Observation();
}

void MujocoEnv::Simulate(const Action& action) {
  for (int i = 0; i < model_->nu; ++i) data_->ctrl[i] = action.values.data[i];
  for (int i = 0; i < frame_skip_; ++i) mj_step(model_.get(), data_);
  mj_rnePostConstraint(model_.get(), data_);
}

FloatView MujocoEnv::Observation() {
  Observe(obs_.data());
  return FloatView{obs_.data(), static_cast<int64_t>(obs_.size())};
}

double MujocoEnv::SquaredNorm(const Action& action) {
  double sum = 0;
  for (int64_t i = 0; i < action.values.size; ++i) {
    const double a = action.values.data[i];
    sum += a * a;
  }
  return sum;
}

namespace {

// The convex hull of `points` (Andrew's monotone chain), counter-clockwise.
std::vector<Picture::Point> Hull(std::vector<Picture::Point> points) {
  std::sort(points.begin(), points.end(), [](const auto& a, const auto& b) {
    return a.x < b.x || (a.x == b.x && a.y < b.y);
  });
  auto cross = [](const Picture::Point& o, const Picture::Point& a,
                  const Picture::Point& b) {
    return (a.x - o.x) * (b.y - o.y) - (a.y - o.y) * (b.x - o.x);
  };
  std::vector<Picture::Point> hull(2 * points.size());
  size_t k = 0;
  for (size_t i = 0; i < points.size(); ++i) {
    while (k >= 2 && cross(hull[k - 2], hull[k - 1], points[i]) <= 0) --k;
    hull[k++] = points[i];
  }
  for (size_t i = points.size() - 1, t = k + 1; i > 0; --i) {
    while (k >= t && cross(hull[k - 2], hull[k - 1], points[i - 1]) <= 0) --k;
    hull[k++] = points[i - 1];
  }
  hull.resize(k > 0 ? k - 1 : 0);
  return hull;
}

// Draws geom `g` in `color`: capsules and cylinders as bands (capsules
// with round ends), boxes as their outline's hull, the rest as discs;
// `to_picture` maps a world point, `scale` is pixels a metre.
void DrawGeom(const mjModel& m, const mjData& d, int g, Color color,
              const std::function<Picture::Point(const double*)>& to_picture,
              double scale, Picture& picture) {
  const double* pos = d.geom_xpos + 3 * g;
  const double* mat = d.geom_xmat + 9 * g;
  const double* size = m.geom_size + 3 * g;
  const Picture::Point centre = to_picture(pos);
  switch (m.geom_type[g]) {
    case mjGEOM_CAPSULE:
    case mjGEOM_CYLINDER: {
      double ends[2][3];
      for (int e = 0; e < 2; ++e) {
        const double sign = e == 0 ? -1 : 1;
        for (int k = 0; k < 3; ++k) {
          ends[e][k] = pos[k] + sign * size[1] * mat[3 * k + 2];
        }
      }
      const Picture::Point a = to_picture(ends[0]);
      const Picture::Point b = to_picture(ends[1]);
      picture.Line(a.x, a.y, b.x, b.y, 2 * size[0] * scale, color);
      if (m.geom_type[g] == mjGEOM_CAPSULE) {
        picture.FillCircle(a.x, a.y, size[0] * scale, color);
        picture.FillCircle(b.x, b.y, size[0] * scale, color);
      }
      break;
    }
    case mjGEOM_BOX: {
      std::vector<Picture::Point> corners;
      for (int c = 0; c < 8; ++c) {
        double corner[3];
        for (int k = 0; k < 3; ++k) {
          corner[k] = pos[k];
          for (int axis = 0; axis < 3; ++axis) {
            const double sign = (c >> axis & 1) != 0 ? 1 : -1;
            corner[k] += sign * size[axis] * mat[3 * k + axis];
          }
        }
        corners.push_back(to_picture(corner));
      }
      picture.FillPolygon(Hull(std::move(corners)), color);
      break;
    }
    default:  // Spheres, ellipsoids: a disc of the largest radius.
      picture.FillCircle(centre.x, centre.y,
                         std::max({size[0], size[1], size[2]}) * scale, color);
      break;
  }
}

}  // namespace

bool MujocoEnv::Render(Picture& picture) const {
  constexpr int kWidth = 480, kHeight = 360;
  constexpr double kScale = 120;  // Pixels a metre.
  const mjModel& m = *model_;
  const mjData& d = *data_;
  // Side view: (x, z), depth y; top view: (x, y), depth z.
  const int up = top_view_ ? 1 : 2;
  const int depth = top_view_ ? 2 : 1;
  const double centre_x = m.nbody > 1 ? d.xpos[3] : 0.0;
  const double centre_up = top_view_ && m.nbody > 1 ? d.xpos[3 + 1] : 0.0;
  const double floor_px = top_view_ ? kHeight / 2.0 : 0.15 * kHeight;
  auto to_picture = [&](const double* p) {
    return picture.Up(kWidth / 2.0 + (p[0] - centre_x) * kScale,
                      floor_px + (p[up] - centre_up) * kScale);
  };
  picture.Reset(kWidth, kHeight, Color::kSky);
  picture.fps = std::max(1, static_cast<int>(std::lround(1.0 / dt())));
  if (!top_view_) {
    picture.FillRect(0, kHeight - floor_px, kWidth, kHeight, Color::kGround);
  }
  // A mark every metre, so that motion shows though the view follows.
  const double first = std::ceil(centre_x - kWidth / (2 * kScale));
  for (double x = first; x < centre_x + kWidth / (2 * kScale); x += 1) {
    const double px = kWidth / 2.0 + (x - centre_x) * kScale;
    picture.Line(px, kHeight - floor_px, px,
                 kHeight - floor_px + (top_view_ ? -kHeight : 12), 2,
                 Color::kGrey);
  }
  std::vector<int> geoms;
  for (int g = 0; g < m.ngeom; ++g) {
    if (m.geom_type[g] != mjGEOM_PLANE && m.geom_rgba[4 * g + 3] > 0) {
      geoms.push_back(g);
    }
  }
  // Far geoms first (the painter's order); the far side in a darker colour.
  std::sort(geoms.begin(), geoms.end(), [&](int a, int b) {
    return d.geom_xpos[3 * a + depth] > d.geom_xpos[3 * b + depth];
  });
  const double body_depth = m.nbody > 1 ? d.xpos[3 + depth] : 0.0;
  for (int g : geoms) {
    const double* pos = d.geom_xpos + 3 * g;
    const Color color =
        pos[depth] > body_depth + 1e-6 ? Color::kLegFar : Color::kPole;
    DrawGeom(m, d, g, color, to_picture, kScale, picture);
  }
  return true;
}

}  // namespace asyncrl
