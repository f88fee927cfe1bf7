// A learner beside the workers (--learner), as HandyRL, IMPALA and Sample
// Factory's APPO train: the options. The rest of the feature:
// segment_buffer.h (the buffer in shared memory) and learner_extension.h
// (how it plugs into the trainer).
#ifndef ASYNCRL_EXPERIMENTS_LEARNER_LEARNER_OPTIONS_H_
#define ASYNCRL_EXPERIMENTS_LEARNER_LEARNER_OPTIONS_H_

#include <cstdint>

#include "asyncrl/misc/flag_spec.h"

namespace asyncrl {

struct LearnerOptions {
  // The run's last process learns; the others act and write segments.
  bool enabled = false;
  // The buffer keeps the newest maximum_segments segments (>= 1; HandyRL's
  // maximum_episodes), within buffer_mib MiB (> 0) of shared memory: the
  // oldest are dropped first.
  int64_t maximum_segments = 4096;
  double buffer_mib = 256;
  // Segments the buffer holds before the first update, >= 1 (HandyRL's
  // minimum_episodes).
  int64_t minimum_segments = 256;
  // Segments per update, >= 1 (HandyRL's batch_size).
  int64_t batch_size = 32;
  // How many times each step the workers write is trained on, on average
  // (Reverb's samples per insert, in rows): the workers wait when the
  // learner falls behind it, the learner when it runs ahead. 0: no limit,
  // each runs at its own pace (HandyRL's); else > 0. 2: measured on
  // MinAtar Breakout (docs/results/2026-12-07-learner.md), where 0 left
  // each step trained on 0.45 times and the final agents below Hogwild's.
  double reuse = 2;

  // Throws InvalidOption (misc/validate.h) naming the field.
  void Validate() const;
  FlagSpecs Flags();
};

}  // namespace asyncrl

#endif  // ASYNCRL_EXPERIMENTS_LEARNER_LEARNER_OPTIONS_H_
