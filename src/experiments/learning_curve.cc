#include "asyncrl/experiments/learning_curve.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "asyncrl/experiments/run_dir.h"

namespace asyncrl {
namespace {

constexpr double kWidth = 720, kHeight = 420;
constexpr double kLeft = 70, kRight = 45, kTop = 40, kBottom = 50;

std::string Fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

// A "nice" tick step for a range (1, 2 or 5 times a power of ten).
double TickStep(double range) {
  if (range <= 0) return 1;
  const double raw = range / 5;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0}) {
    if (raw <= m * p) return m * p;
  }
  return 10 * p;
}

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else
      out += c;
  }
  return out;
}

}  // namespace

std::vector<ScoreRow> ReadScores(const std::string& scores_path) {
  std::vector<ScoreRow> rows;
  std::ifstream in(scores_path, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)),
                         std::istreambuf_iterator<char>());
  int entropy_column = -1;
  bool header = true;
  size_t begin = 0;
  for (size_t end; (end = text.find('\n', begin)) != std::string::npos;
       begin = end + 1) {
    std::istringstream fields(text.substr(begin, end - begin));
    if (header) {  // Tab-separated names; the first of a name counts.
      header = false;
      std::string name;
      for (int i = 0; std::getline(fields, name, '\t'); ++i) {
        if (name == "average_entropy" && entropy_column < 0) {
          entropy_column = i;
        }
      }
      continue;
    }
    ScoreRow r;
    double episodes, elapsed, median, stdev;
    if (!(fields >> r.steps >> episodes >> elapsed >> r.mean >> median >>
          stdev >> r.max >> r.min)) {
      continue;
    }
    r.average_entropy = std::nan("");
    std::string cell;
    for (int i = 8; i <= entropy_column && fields >> cell; ++i) {
      char* parsed = nullptr;
      const double v = std::strtod(cell.c_str(), &parsed);
      if (i == entropy_column && *parsed == '\0') r.average_entropy = v;
    }
    rows.push_back(r);
  }
  return rows;
}

std::string LearningCurveSvg(std::vector<ScoreRow> rows,
                             const std::string& title) {
  std::stable_sort(
      rows.begin(), rows.end(),
      [](const ScoreRow& a, const ScoreRow& b) { return a.steps < b.steps; });
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth
      << "\" height=\"" << kHeight << "\" font-family=\"sans-serif\" "
      << "font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" "
      << "fill=\"white\"/>\n<text x=\"" << kWidth / 2 << "\" y=\"22\" "
      << "text-anchor=\"middle\" font-size=\"15\">" << Escape(title)
      << "</text>\n";
  if (rows.empty()) {
    svg << "<text x=\"" << kWidth / 2 << "\" y=\"" << kHeight / 2
        << "\" text-anchor=\"middle\">no evaluation yet</text>\n</svg>\n";
    return svg.str();
  }
  double x0 = 0, x1 = static_cast<double>(rows.back().steps);
  double y0 = rows[0].min, y1 = rows[0].max;
  for (const auto& r : rows) {
    y0 = std::min(y0, r.min);
    y1 = std::max(y1, r.max);
  }
  if (x1 <= x0) x1 = x0 + 1;
  if (y1 <= y0) y1 = y0 + 1;
  const double ystep = TickStep(y1 - y0);
  y0 = std::floor(y0 / ystep) * ystep;
  y1 = std::ceil(y1 / ystep) * ystep;
  const double pw = kWidth - kLeft - kRight, ph = kHeight - kTop - kBottom;
  auto px = [&](double x) { return kLeft + (x - x0) / (x1 - x0) * pw; };
  auto py = [&](double y) { return kTop + (y1 - y) / (y1 - y0) * ph; };

  // Grid and axes.
  for (double y = y0; y <= y1 + ystep / 2; y += ystep) {
    svg << "<line x1=\"" << kLeft << "\" x2=\"" << kLeft + pw << "\" y1=\""
        << py(y) << "\" y2=\"" << py(y) << "\" stroke=\"#ddd\"/>\n<text x=\""
        << kLeft - 6 << "\" y=\"" << py(y) + 4 << "\" text-anchor=\"end\">"
        << Fmt(y) << "</text>\n";
  }
  const double xstep = TickStep(x1 - x0);
  for (double x = x0; x <= x1 + xstep / 2; x += xstep) {
    svg << "<line x1=\"" << px(x) << "\" x2=\"" << px(x) << "\" y1=\"" << kTop
        << "\" y2=\"" << kTop + ph << "\" stroke=\"#eee\"/>\n<text x=\""
        << px(x) << "\" y=\"" << kTop + ph + 16 << "\" text-anchor=\"middle\">"
        << Fmt(x) << "</text>\n";
  }
  svg << "<rect x=\"" << kLeft << "\" y=\"" << kTop << "\" width=\"" << pw
      << "\" height=\"" << ph << "\" fill=\"none\" stroke=\"#444\"/>\n"
      << "<text x=\"" << kLeft + pw / 2 << "\" y=\"" << kHeight - 10
      << "\" text-anchor=\"middle\">global steps</text>\n<text x=\"16\" y=\""
      << kTop + ph / 2 << "\" text-anchor=\"middle\" transform=\"rotate(-90 16 "
      << kTop + ph / 2 << ")\">evaluation return</text>\n";

  // Min-max band, then the mean.
  svg << "<polygon fill=\"#9ecae1\" fill-opacity=\"0.5\" stroke=\"none\" "
      << "points=\"";
  for (const auto& r : rows) svg << px(r.steps) << "," << py(r.max) << " ";
  for (auto it = rows.rbegin(); it != rows.rend(); ++it) {
    svg << px(it->steps) << "," << py(it->min) << " ";
  }
  svg << "\"/>\n<polyline fill=\"none\" stroke=\"#08519c\" stroke-width=\"2\" "
      << "points=\"";
  for (const auto& r : rows) svg << px(r.steps) << "," << py(r.mean) << " ";
  svg << "\"/>\n";
  for (const auto& r : rows) {
    svg << "<circle cx=\"" << px(r.steps) << "\" cy=\"" << py(r.mean)
        << "\" r=\"2.5\" fill=\"#08519c\"/>\n";
  }
  svg << "<text x=\"" << kLeft + pw - 4 << "\" y=\"" << kTop + 14
      << "\" text-anchor=\"end\" fill=\"#08519c\">mean (band: min-max)"
      << "</text>\n</svg>\n";
  return svg.str();
}

size_t WriteLearningCurve(const std::string& outdir, const std::string& title,
                          const std::vector<ScoreRow>& rows) {
  if (!TryWriteFileAtomically(ScoresSvgPath(outdir),
                              LearningCurveSvg(rows, title))
           .empty()) {
    return 0;
  }
  return rows.size();
}

size_t WriteLearningCurve(const std::string& outdir, const std::string& title) {
  return WriteLearningCurve(outdir, title, ReadScores(ScoresPath(outdir)));
}

}  // namespace asyncrl
