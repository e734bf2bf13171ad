// Plot: latency CDFs rendered to SVG by gnuplot (Debian gnuplot-nox) from
// the data files Report writes — one panel per comparison, one line per
// backend/operation, so a person sees the difference.
//
// A plot spec (kvbench --plot_spec=FILE, written by compare_redis.sh) is
// lines of:
//   panel TITLE...            starts a panel
//   series LABEL FILE OP      a line: OP's block of data FILE, named LABEL
//                             (LABEL without spaces; '_' shows as a space)
// Blank lines and lines starting with '#' are ignored.
// Thread-safety: pure functions (RenderPlot runs gnuplot as a child).
#ifndef RPKV_TOOLS_KVBENCH_PLOT_H_
#define RPKV_TOOLS_KVBENCH_PLOT_H_

#include <string>
#include <vector>

#include "kv/status.h"

namespace kvbench {

struct PlotSeries {
  std::string label;
  std::string data_file;
  std::string op;  // "read", "update", ...
};

struct PlotPanel {
  std::string title;
  std::vector<PlotSeries> series;
};

// Errors: io_error (unreadable), invalid_argument (line N malformed).
kv::Status ParsePlotSpec(const std::string& path,
                         std::vector<PlotPanel>* panels);

// Writes SVG_PATH with gnuplot (its script kept beside it, SVG_PATH.gp).
// A series whose data file lacks its op is left out (a warning on stderr).
// Errors: invalid_argument (no panels),
// io_error (a file), unavailable (gnuplot missing or failing: "install
// gnuplot-nox (bash tools/setup.sh)").
kv::Status RenderPlot(const std::string& svg_path,
                      const std::vector<PlotPanel>& panels);

}  // namespace kvbench

#endif  // RPKV_TOOLS_KVBENCH_PLOT_H_
