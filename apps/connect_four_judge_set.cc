// Writes src/envs/games/connect_four_judge_set.cc: the Connect Four judge's
// positions (JudgePositions: 200 positions 10 to 16 stones in, seed 2027)
// with each one's value-keeping columns as solved here, so a training run
// judges its agent without solving anything.
//
// Run from the source root, then format what it wrote:
//   f=src/envs/games/connect_four_judge_set.cc
//   build/apps/connect_four_judge_set > $f && clang-format -i $f
#include <cstdio>
#include <iostream>

#include "asyncrl/envs/games/connect_four_solver.h"

int main() {
  using asyncrl::ConnectFour;
  constexpr int kCount = 200, kMinPlies = 10, kMaxPlies = 16;
  constexpr uint64_t kSeed = 2027;
  asyncrl::ConnectFourSolver solver(24);
  const auto positions =
      asyncrl::JudgePositions(kCount, kMinPlies, kMaxPlies, kSeed, solver);
  std::cout << "// Written by build/apps/connect_four_judge_set (apps/"
               "connect_four_judge_set.cc):\n// JudgePositions("
            << kCount << ", " << kMinPlies << ", " << kMaxPlies << ", " << kSeed
            << ") and each position's value-keeping columns\n// (bit c: "
               "column c keeps the value). Do not edit.\n"
               "#include \"asyncrl/envs/games/connect_four_solver.h\"\n\n"
               "#include <iterator>\n\n"
               "namespace asyncrl {\n"
               "namespace {\n\n"
               "const JudgedPosition kSet[] = {\n";
  int done = 0;
  for (const auto& columns : positions) {
    const auto game = asyncrl::PlayColumns(columns);
    const auto keeps = asyncrl::ValueKeepingMoves(*game, solver);
    int mask = 0;
    for (int c = 0; c < ConnectFour::kColumns; ++c) mask |= keeps[c] << c;
    std::string digits;
    for (const int64_t c : columns) digits += static_cast<char>('0' + c);
    std::cout << "    {\"" << digits << "\", " << mask << "},\n";
    if (++done % 20 == 0) {
      std::fprintf(stderr, "%d of %d positions judged\n", done, kCount);
    }
  }
  std::cout
      << "};\n\n}  // namespace\n\n"
         "const std::vector<JudgedPosition>& ConnectFourJudgeSet() {\n"
         "  static const std::vector<JudgedPosition> set(std::begin(kSet),\n"
         "                                               std::end(kSet));\n"
         "  return set;\n}\n\n}  // namespace asyncrl\n";
  return 0;
}
