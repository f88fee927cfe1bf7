// The learning curve of a run as a self-contained SVG: evaluation mean
// against global steps with the min-max band, drawn from scores.txt.
#ifndef ASYNCRL_EXPERIMENTS_LEARNING_CURVE_H_
#define ASYNCRL_EXPERIMENTS_LEARNING_CURVE_H_

#include <cstdint>
#include <string>
#include <vector>

namespace asyncrl {

struct ScoreRow {
  int64_t steps = 0;
  double mean = 0, max = 0, min = 0;
};

// Reads the steps, mean, max and min columns of scores.txt (rows sorted by
// steps). A missing file gives no rows; malformed rows are skipped.
std::vector<ScoreRow> ReadScores(const std::string& scores_path);

// An SVG document; a placeholder text when there are no rows.
std::string LearningCurveSvg(const std::vector<ScoreRow>& rows,
                             const std::string& title);

// Rewrites <outdir>/scores.svg from <outdir>/scores.txt (temporary file and
// rename). Returns the number of rows drawn.
size_t WriteLearningCurve(const std::string& outdir, const std::string& title);

}  // namespace asyncrl

#endif  // ASYNCRL_EXPERIMENTS_LEARNING_CURVE_H_
