// ASYNCRL_VECTOR_CLONES: compile a function for AVX-512, AVX2 and baseline
// x86-64, the loader picking the best the CPU runs (GCC's function
// multiversioning, target_clones), so one binary runs anywhere and uses the
// wide vectors where they exist. A file using it is compiled with
// -ffp-contract=off (src/CMakeLists.txt): without contraction into FMAs
// (which the AVX-512 clone could use and the baseline cannot) every clone
// rounds alike, so results do not depend on the CPU. Internal: not
// installed.
#ifndef ASYNCRL_MISC_PLATFORM_VECTOR_CLONES_H_
#define ASYNCRL_MISC_PLATFORM_VECTOR_CLONES_H_

#define ASYNCRL_VECTOR_CLONES \
  __attribute__((target_clones("avx512f", "avx2", "default")))

#endif  // ASYNCRL_MISC_PLATFORM_VECTOR_CLONES_H_
