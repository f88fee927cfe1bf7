#ifndef ASYNCRL_MISC_VERSION_H_
#define ASYNCRL_MISC_VERSION_H_

namespace asyncrl {

// The library's version and the git revision it was built from
// (build_info.h's kVersion and kBuildRevision). Code that is compiled once
// per build rather than once per commit calls these: build_info.h changes
// with every revision, and only version.cc includes it.
const char* Version();
const char* BuildRevision();

}  // namespace asyncrl

#endif  // ASYNCRL_MISC_VERSION_H_
