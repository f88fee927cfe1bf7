// Environments written in Python, trained in the workers:
// --env python:MODULE:FACTORY [--env-kwargs JSON].
//
// Every process that steps one starts its own embedded CPython (after the
// fork: one interpreter per worker, no GIL shared between them), imports
// MODULE (from the current folder or PYTHONPATH) and calls FACTORY(**kwargs)
// for each environment copy. The environment follows Gymnasium's API by
// duck typing (nothing imports Gymnasium):
//   reset(seed=None) -> (observation, info)
//   step(action) -> (observation, reward, terminated, truncated, info)
//   observation_space / action_space: a Box (shape, low, high[, dtype]) or a
//   Discrete (n[, start]); a Discrete observation is given to the agent as
//   a one-hot vector.
// Optional parameters (--env-param, curricula): a dict attribute
//   asyncrl_parameters = {"NAME": {"min": A, "max": B, "help": "...",
//                                  "integer": False}}
// whose values are the environment's attributes NAME (the default is the
// attribute's value); a value set is assigned with setattr before the next
// reset().
//
// The parent never starts Python (a forked interpreter is not safe): the
// spaces and parameters it needs come from a short-lived child process that
// builds one copy (once per name and kwargs). A wrong API, a space asyncrl
// cannot train or an exception there is a one-line error naming the call;
// an exception while training stops the run as any worker failure does
// (the Python traceback on the worker's stderr).
#ifndef ASYNCRL_EXPERIMENTS_PYTHON_ENV_PYTHON_ENV_H_
#define ASYNCRL_EXPERIMENTS_PYTHON_ENV_PYTHON_ENV_H_

#include "asyncrl/envs/registry.h"

namespace asyncrl {

// Registers the prefix "python:" (pattern python:MODULE:FACTORY) with
// `registry`; a second call does nothing.
void RegisterPythonEnvironments(EnvRegistry& registry);

}  // namespace asyncrl

#endif  // ASYNCRL_EXPERIMENTS_PYTHON_ENV_PYTHON_ENV_H_
