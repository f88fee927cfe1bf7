#include "asyncrl/misc/version.h"

#include "asyncrl/misc/build_info.h"

namespace asyncrl {

const char* Version() { return kVersion; }
const char* BuildRevision() { return kBuildRevision; }

}  // namespace asyncrl
