// Registers Corridor (corridor_env.cc) with asyncrl's registry under
// "Corridor"; a second call does nothing.
#ifndef CORRIDOR_H_
#define CORRIDOR_H_

void RegisterCorridor();

#endif  // CORRIDOR_H_
