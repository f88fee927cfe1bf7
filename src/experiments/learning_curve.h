// The learning curve of a run as a self-contained SVG: evaluation mean
// against global steps with the min-max band, drawn from scores.txt.
#ifndef ASYNCRL_EXPERIMENTS_LEARNING_CURVE_H_
#define ASYNCRL_EXPERIMENTS_LEARNING_CURVE_H_

#include <cstdint>
#include <string>
#include <vector>

namespace asyncrl {

// One row of scores.txt as the parent reads it.
struct ScoreRow {
  int64_t steps = 0;
  double mean = 0, max = 0, min = 0;
  // The evaluating agent's `average_entropy` column (NaN: the agent reports
  // none).
  double average_entropy = 0;
};

// Reads scores.txt's rows in file order: steps, mean, max, min and, found
// by its name in the header, average_entropy. Whole lines only (a row being
// appended is read on a later call); a missing file gives no rows;
// malformed rows are skipped.
std::vector<ScoreRow> ReadScores(const std::string& scores_path);

// An SVG document of the rows (in any order; drawn by steps); a placeholder
// text when there are none.
std::string LearningCurveSvg(std::vector<ScoreRow> rows,
                             const std::string& title);

// Rewrites <outdir>/scores.svg from `rows` (temporary file and rename).
// Returns the number of rows drawn.
size_t WriteLearningCurve(const std::string& outdir, const std::string& title,
                          const std::vector<ScoreRow>& rows);
// The same from <outdir>/scores.txt.
size_t WriteLearningCurve(const std::string& outdir, const std::string& title);

}  // namespace asyncrl

#endif  // ASYNCRL_EXPERIMENTS_LEARNING_CURVE_H_
