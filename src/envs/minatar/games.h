// Factories of the five MinAtar games; used by minatar.cc only.
#ifndef ASYNCRL_ENVS_MINATAR_GAMES_H_
#define ASYNCRL_ENVS_MINATAR_GAMES_H_

#include <memory>

#include "asyncrl/envs/minatar/minatar.h"

namespace asyncrl {
namespace minatar {

std::unique_ptr<MinAtarGame> MakeAsterix(const MinAtarOptions& options);
std::unique_ptr<MinAtarGame> MakeBreakout(const MinAtarOptions& options);
std::unique_ptr<MinAtarGame> MakeFreeway(const MinAtarOptions& options);
std::unique_ptr<MinAtarGame> MakeSeaquest(const MinAtarOptions& options);
std::unique_ptr<MinAtarGame> MakeSpaceInvaders(const MinAtarOptions& options);

}  // namespace minatar
}  // namespace asyncrl

#endif  // ASYNCRL_ENVS_MINATAR_GAMES_H_
