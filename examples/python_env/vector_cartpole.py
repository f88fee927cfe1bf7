"""A vector environment of your own, taken whole by asyncrl.

`VectorCartPole(num_envs=8)` steps 8 copies of cartpole.CartPole in one
call, with Gymnasium's VectorEnv API: batched `reset(seed=...)` and
`step(actions)`, `num_envs`, `single_observation_space` and
`single_action_space`, and the same-step autoreset (a copy that ends is reset
in the same step, its last observation in `infos["final_obs"]`, as
Gymnasium's `AutoresetMode.SAME_STEP`). A Gymnasium vector environment built
with `autoreset_mode=gymnasium.vector.AutoresetMode.SAME_STEP` is trained the
same way. Train it with

    train_a3c --env python:vector_cartpole:VectorCartPole \
        --env-kwargs '{"num_envs": 8}' --processes 2

run from this folder: each worker builds one VectorCartPole and steps its 8
copies with one call (--envs-per-process is its num_envs).
"""

from cartpole import CartPole


class VectorCartPole:
    metadata = {"autoreset_mode": "SameStep"}

    def __init__(self, num_envs=8, max_steps=500):
        self.envs = [CartPole(max_steps) for _ in range(num_envs)]
        self.num_envs = num_envs
        self.single_observation_space = self.envs[0].observation_space
        self.single_action_space = self.envs[0].action_space

    def reset(self, seed=None, options=None):
        # Gymnasium's rule: an int seeds copy i with seed + i; a list gives
        # each copy its own.
        if seed is None or isinstance(seed, int):
            seeds = [None if seed is None else seed + i
                     for i in range(self.num_envs)]
        else:
            seeds = list(seed)
        observations = [env.reset(seed=s)[0]
                        for env, s in zip(self.envs, seeds)]
        return observations, {}

    def step(self, actions):
        observations, rewards, terminations, truncations = [], [], [], []
        final_obs, ended = [None] * self.num_envs, [False] * self.num_envs
        for i, (env, action) in enumerate(zip(self.envs, actions)):
            obs, reward, terminated, truncated, _ = env.step(int(action))
            if terminated or truncated:
                final_obs[i], ended[i] = obs, True
                obs, _ = env.reset()
            observations.append(obs)
            rewards.append(reward)
            terminations.append(terminated)
            truncations.append(truncated)
        infos = {}
        if any(ended):
            infos = {"final_obs": final_obs, "_final_obs": ended}
        return observations, rewards, terminations, truncations, infos
