// The MuJoCo tasks against Gymnasium's v4 definitions: spaces, timesteps,
// the 1000-step limit, reset noise, rewards, health and termination, and
// the keyword arguments declared as parameters.
#include <gtest/gtest.h>
#include <mujoco/mujoco.h>

#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "asyncrl/envs/mujoco/locomotion.h"
#include "asyncrl/envs/registry.h"

namespace asyncrl {
// Named apart from the other test files compiled with it in one unit
// (tests/CMakeLists.txt: unity groups).
namespace mujoco_test {
namespace {

struct Figures {
  std::string name;
  int64_t observation_size;
  int64_t action_size;
  float action_bound;  // The Box is [-bound, bound] in every dimension.
  double dt;
};

// Gymnasium's v4 figures (observation_space, action_space, dt).
const std::vector<Figures>& GymnasiumFigures() {
  static const std::vector<Figures> figures = {
      {"HalfCheetah", 17, 6, 1.0f, 0.05},
      {"Hopper", 11, 3, 1.0f, 0.008},
      {"Walker2d", 17, 6, 1.0f, 0.008},
      {"Ant", 27, 8, 1.0f, 0.05},
      {"Swimmer", 8, 2, 1.0f, 0.04},
      {"Humanoid", 376, 17, 0.4f, 0.015},
      {"InvertedPendulum", 4, 1, 3.0f, 0.04},
  };
  return figures;
}

MujocoEnv& AsMujoco(Env& env) { return dynamic_cast<MujocoEnv&>(env); }

std::vector<double> Qpos(const MujocoEnv& env) {
  return {env.data().qpos, env.data().qpos + env.model().nq};
}
std::vector<double> Qvel(const MujocoEnv& env) {
  return {env.data().qvel, env.data().qvel + env.model().nv};
}

// Whether qpos[i] belongs to a free joint's orientation (which MuJoCo
// normalizes after the noise is added).
bool IsQuaternion(const mjModel& m, int i) {
  for (int j = 0; j < m.njnt; ++j) {
    const int first = m.jnt_qposadr[j];
    if (m.jnt_type[j] == mjJNT_FREE && i >= first + 3 && i < first + 7) {
      return true;
    }
  }
  return false;
}

TEST(MujocoTest, SpacesAndTimestepsAreGymnasiums) {
  for (const Figures& f : GymnasiumFigures()) {
    SCOPED_TRACE(f.name);
    auto env = MakeMujocoTask(f.name);
    EXPECT_EQ(env->Name(), f.name);
    const Space& obs = env->ObservationSpace();
    ASSERT_EQ(obs.shape, std::vector<int64_t>{f.observation_size});
    EXPECT_TRUE(std::isinf(obs.low[0]) && obs.low[0] < 0);
    const Space& act = env->ActionSpace();
    ASSERT_EQ(act.shape, std::vector<int64_t>{f.action_size});
    for (int64_t i = 0; i < f.action_size; ++i) {
      EXPECT_EQ(act.low[i], -f.action_bound);
      EXPECT_EQ(act.high[i], f.action_bound);
    }
    EXPECT_NEAR(AsMujoco(*env).dt(), f.dt, 1e-12);
    EXPECT_EQ(env->Reset(0).size, f.observation_size);
  }
}

TEST(MujocoTest, EpisodesAreCutAt1000Steps) {
  auto env = MakeEnv("HalfCheetah-v4");
  env->Reset(3);
  const std::vector<float> zeros(6, 0.0f);
  const Action still = Action::Continuous(zeros.data(), 6);
  for (int t = 1; t < 1000; ++t) {
    ASSERT_FALSE(env->Step(still).Done()) << "step " << t;
  }
  const StepResult last = env->Step(still);
  EXPECT_TRUE(last.truncated);
  EXPECT_FALSE(last.terminated);
}

// Gymnasium's reset: qpos0 + uniform(-s, s); velocities uniform(-s, s), or
// s x standard normal (HalfCheetah, Ant).
TEST(MujocoTest, ResetNoiseHasGymnasiumsDistribution) {
  struct Case {
    std::string task;
    double scale;
    bool normal_velocity;
  };
  for (const Case& c :
       {Case{"HalfCheetah", 0.1, true}, Case{"Hopper", 5e-3, false},
        Case{"Humanoid", 1e-2, false}}) {
    SCOPED_TRACE(c.task);
    auto env = MakeMujocoTask(c.task);
    MujocoEnv& mj = AsMujoco(*env);
    const int nq = mj.model().nq;
    double sum_q = 0, sum_q2 = 0, sum_v = 0, sum_v2 = 0, max_v = 0;
    int n_q = 0, n_v = 0;
    for (uint64_t seed = 0; seed < 400; ++seed) {
      env->Reset(seed);
      const std::vector<double> qpos = Qpos(mj);
      for (int i = 0; i < nq; ++i) {
        if (IsQuaternion(mj.model(), i)) continue;  // Normalized by MuJoCo.
        const double noise = qpos[i] - mj.model().qpos0[i];
        ASSERT_LE(std::abs(noise), c.scale);
        sum_q += noise;
        sum_q2 += noise * noise;
        ++n_q;
      }
      for (double v : Qvel(mj)) {
        sum_v += v;
        sum_v2 += v * v;
        max_v = std::max(max_v, std::abs(v));
        ++n_v;
      }
    }
    const double uniform_sd = c.scale / std::sqrt(3.0);
    EXPECT_NEAR(sum_q / n_q, 0.0, 0.05 * c.scale);
    EXPECT_NEAR(std::sqrt(sum_q2 / n_q), uniform_sd, 0.05 * uniform_sd);
    const double velocity_sd = c.normal_velocity ? c.scale : uniform_sd;
    EXPECT_NEAR(sum_v / n_v, 0.0, 0.05 * c.scale);
    EXPECT_NEAR(std::sqrt(sum_v2 / n_v), velocity_sd, 0.05 * velocity_sd);
    if (c.normal_velocity) {
      EXPECT_GT(max_v, 2.5 * c.scale);  // Normal tails, beyond uniform's.
    } else {
      EXPECT_LE(max_v, c.scale);
    }
  }
}

TEST(MujocoTest, ObservationsAreGymnasiumsSlices) {
  // Hopper: qpos[1:], then qvel clipped to [-10, 10].
  auto hopper = MakeMujocoTask("Hopper");
  MujocoEnv& mj = AsMujoco(*hopper);
  hopper->Reset(0);
  std::vector<double> qpos = Qpos(mj);
  std::vector<double> qvel = Qvel(mj);
  qvel[0] = 25.0;
  qvel[3] = -12.5;
  mj.SetState(qpos, qvel);
  std::vector<float> storage(3, 0.0f);
  const StepResult r = hopper->Step(Action::Continuous(storage.data(), 3));
  qpos = Qpos(mj);
  qvel = Qvel(mj);
  for (int i = 1; i < mj.model().nq; ++i) {
    EXPECT_FLOAT_EQ(r.observation[i - 1], static_cast<float>(qpos[i]));
  }
  for (int i = 0; i < mj.model().nv; ++i) {
    EXPECT_FLOAT_EQ(r.observation[mj.model().nq - 1 + i],
                    static_cast<float>(std::clamp(qvel[i], -10.0, 10.0)));
  }

  // Humanoid: qpos[2:], qvel, cinert, cvel, qfrc_actuator, cfrc_ext.
  auto humanoid = MakeMujocoTask("Humanoid");
  MujocoEnv& h = AsMujoco(*humanoid);
  humanoid->Reset(0);
  std::vector<float> action(17, 0.2f);
  // It starts above the floor; after 20 steps (0.3 s) its feet are on it.
  StepResult s;
  for (int t = 0; t < 20; ++t) {
    s = humanoid->Step(Action::Continuous(action.data(), 17));
  }
  const mjModel& m = h.model();
  const mjData& d = h.data();
  std::vector<double> want(d.qpos + 2, d.qpos + m.nq);
  want.insert(want.end(), d.qvel, d.qvel + m.nv);
  want.insert(want.end(), d.cinert, d.cinert + 10 * m.nbody);
  want.insert(want.end(), d.cvel, d.cvel + 6 * m.nbody);
  want.insert(want.end(), d.qfrc_actuator, d.qfrc_actuator + m.nv);
  want.insert(want.end(), d.cfrc_ext, d.cfrc_ext + 6 * m.nbody);
  ASSERT_EQ(static_cast<int64_t>(want.size()), s.observation.size);
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_FLOAT_EQ(s.observation[i], static_cast<float>(want[i])) << i;
  }
  // The contact forces are propagated after the step (zero without
  // mj_rnePostConstraint): the feet stand on the floor.
  const double contact =
      std::accumulate(d.cfrc_ext, d.cfrc_ext + 6 * m.nbody, 0.0,
                      [](double a, double b) { return a + std::abs(b); });
  EXPECT_GT(contact, 0.0);
}

// reward = w_forward x dx/dt + healthy_reward - w_ctrl x |a|^2.
TEST(MujocoTest, RewardIsForwardPlusHealthyMinusControl) {
  for (const std::string task :
       {"Hopper", "Walker2d", "HalfCheetah", "Swimmer", "Ant", "Humanoid"}) {
    SCOPED_TRACE(task);
    const LocomotionSpec spec = LocomotionSpecOf(task);
    Locomotion env(spec);
    env.Reset(1);
    std::vector<float> action(env.ActionSpace().FlatSize());
    for (size_t i = 0; i < action.size(); ++i) {
      action[i] = env.ActionSpace().high[i] * (i % 2 == 0 ? 0.5f : -0.25f);
    }
    double squared = 0;
    for (float a : action) squared += static_cast<double>(a) * a;
    const double before = env.ForwardPosition();
    const StepResult r =
        env.Step(Action::Continuous(action.data(), action.size()));
    const double velocity = (env.ForwardPosition() - before) / env.dt();
    const double healthy = spec.health == LocomotionSpec::Health::kAlways
                               ? 0
                               : spec.healthy_reward;
    EXPECT_NEAR(r.reward,
                spec.forward_reward_weight * velocity + healthy -
                    spec.ctrl_cost_weight * squared,
                1e-9);
    EXPECT_TRUE(env.IsHealthy());
    EXPECT_FALSE(r.terminated);
  }
}

TEST(MujocoTest, UnhealthyStatesEndTheEpisodeAsGymnasiums) {
  struct Case {
    std::string task;
    int index;  // The qpos entry moved out of its healthy range.
    double value;
  };
  // Hopper: z > 0.7, |angle| < 0.2; Walker2d: 0.8 < z < 2, |angle| < 1;
  // Ant: 0.2 <= z <= 1; Humanoid: 1 < z < 2.
  for (const Case& c : {Case{"Hopper", 1, 0.5}, Case{"Hopper", 2, 0.3},
                        Case{"Walker2d", 1, 2.5}, Case{"Walker2d", 2, -1.2},
                        Case{"Ant", 2, 1.5}, Case{"Humanoid", 2, 0.8}}) {
    SCOPED_TRACE(c.task + " qpos[" + std::to_string(c.index) + "]");
    for (const int terminate : {1, 0}) {
      auto env = MakeMujocoTask(c.task);
      env->SetParameter("terminate_when_unhealthy", terminate);
      env->Reset(0);
      MujocoEnv& mj = AsMujoco(*env);
      std::vector<double> qpos = Qpos(mj);
      qpos[c.index] = c.value;
      mj.SetState(qpos, std::vector<double>(mj.model().nv, 0.0));
      std::vector<float> zeros(env->ActionSpace().FlatSize(), 0.0f);
      const StepResult r =
          env->Step(Action::Continuous(zeros.data(), zeros.size()));
      auto& loco = dynamic_cast<Locomotion&>(*env);
      ASSERT_FALSE(loco.IsHealthy());
      EXPECT_EQ(r.terminated, terminate == 1);
    }
  }
}

TEST(MujocoTest, ParametersChangeTheRewardFromTheNextReset) {
  auto run = [](double ctrl_cost_weight) {
    auto env = MakeMujocoTask("HalfCheetah");
    env->SetParameter("ctrl_cost_weight", ctrl_cost_weight);
    env->Reset(7);
    std::vector<float> action(6, 0.5f);
    return env->Step(Action::Continuous(action.data(), 6)).reward;
  };
  // The same trajectory; the cost is 6 x 0.25 = 1.5 x the weight.
  EXPECT_NEAR(run(0.1) - run(0.0), -0.15, 1e-9);
  auto env = MakeMujocoTask("Hopper");
  EXPECT_THROW(env->SetParameter("healthy_reward", -1), std::invalid_argument);
  EXPECT_THROW(env->SetParameter("forward_reward_weigth", 1),
               std::invalid_argument);
  // Ant-v4 has no forward_reward_weight keyword argument.
  EXPECT_THROW(MakeMujocoTask("Ant")->SetParameter("forward_reward_weight", 2),
               std::invalid_argument);
}

TEST(MujocoTest, InvertedPendulumEndsWhenThePoleLeans) {
  auto env = MakeMujocoTask("InvertedPendulum");
  env->Reset(0);
  MujocoEnv& mj = AsMujoco(*env);
  std::vector<float> zero(1, 0.0f);
  StepResult r = env->Step(Action::Continuous(zero.data(), 1));
  EXPECT_EQ(r.reward, 1.0);
  EXPECT_FALSE(r.terminated);
  mj.SetState({0.0, 0.25}, {0.0, 0.0});
  r = env->Step(Action::Continuous(zero.data(), 1));
  EXPECT_EQ(r.reward, 1.0);
  EXPECT_TRUE(r.terminated);
}

TEST(MujocoTest, ModelsAreCompiledIntoTheLibrary) {
  const std::vector<std::string> names = MujocoModelNames();
  EXPECT_EQ(names, (std::vector<std::string>{"ant", "half_cheetah", "hopper",
                                             "humanoid", "inverted_pendulum",
                                             "swimmer", "walker2d"}));
  try {
    MujocoModelXml("cheetah");
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'cheetah'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("half_cheetah"), std::string::npos);
  }
}

}  // namespace
}  // namespace mujoco_test
}  // namespace asyncrl
