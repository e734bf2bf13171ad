#include "plot.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

extern char** environ;

namespace kvbench {
namespace {

// The index (gnuplot "index N") of op's block in a data file of
// WriteCdfData, or -1.
kv::Result<int> BlockIndex(const std::string& file, const std::string& op) {
  std::ifstream in(file);
  if (!in) return kv::Status::IoError("cannot read plot data " + file);
  std::string line;
  int index = 0;
  while (std::getline(in, line)) {
    if (line.rfind("# op ", 0) != 0) continue;
    if (line.substr(5) == op) return index;
    index++;
  }
  return kv::Status::InvalidArgument("plot data " + file + " has no '" + op +
                                     "' operations");
}

std::string GnuplotString(std::string s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

kv::Status ParsePlotSpec(const std::string& path,
                         std::vector<PlotPanel>* panels) {
  std::ifstream in(path);
  if (!in) return kv::Status::IoError("cannot read plot spec " + path);
  std::string line;
  for (int n = 1; std::getline(in, line); n++) {
    std::istringstream words(line);
    std::string verb;
    if (!(words >> verb) || verb[0] == '#') continue;
    auto bad = [&](const char* why) {
      return kv::Status::InvalidArgument(path + ":" + std::to_string(n) + ": " +
                                         why);
    };
    if (verb == "panel") {
      std::string title;
      std::getline(words >> std::ws, title);
      panels->push_back(PlotPanel{title, {}});
    } else if (verb == "series") {
      PlotSeries s;
      if (!(words >> s.label >> s.data_file >> s.op)) {
        return bad("expected 'series LABEL FILE OP'");
      }
      if (panels->empty()) return bad("'series' before any 'panel'");
      for (char& c : s.label) {
        if (c == '_') c = ' ';
      }
      panels->back().series.push_back(s);
    } else {
      return bad("expected 'panel' or 'series'");
    }
  }
  return kv::Status::Ok();
}

kv::Status RenderPlot(const std::string& svg_path,
                      const std::vector<PlotPanel>& panels) {
  if (panels.empty()) return kv::Status::InvalidArgument("nothing to plot");
  int cols = panels.size() == 1 ? 1 : 2;
  int rows = static_cast<int>((panels.size() + cols - 1) / cols);
  std::ostringstream gp;
  gp << "set terminal svg size " << 640 * cols << "," << 420 * rows
     << " dynamic enhanced font 'sans,11' background rgb 'white'\n"
     << "set output " << GnuplotString(svg_path) << "\n"
     << "set logscale x\nset grid xtics ytics mxtics\n"
     << "set xlabel 'latency (µs, log scale)'\n"
     << "set ylabel 'fraction of operations at or below'\n"
     << "set yrange [0:1]\nset key bottom right\n"
     << "set multiplot layout " << rows << "," << cols << "\n";
  for (const PlotPanel& p : panels) {
    // A series whose run recorded no such operation (a failed run) is left
    // out with a warning; the other lines are still worth seeing.
    std::ostringstream lines;
    int drawn = 0;
    for (const PlotSeries& s : p.series) {
      auto index = BlockIndex(s.data_file, s.op);
      if (!index.ok()) {
        std::fprintf(stderr, "kvbench: plot: %s; '%s' left out\n",
                     index.status().ToString().c_str(), s.label.c_str());
        continue;
      }
      lines << (drawn++ ? ", " : "") << GnuplotString(s.data_file) << " index "
            << *index << " using 1:2 with steps lw 2 title "
            << GnuplotString(s.label);
    }
    gp << "set title " << GnuplotString(p.title) << "\n";
    if (drawn == 0) {
      // Keeps the layout: an empty panel says what is missing.
      gp << "set label 1 'no data' at graph 0.5,0.5 center\n"
         << "plot [1:10] NaN notitle\nunset label 1\n";
    } else {
      gp << "plot " << lines.str() << "\n";
    }
  }
  gp << "unset multiplot\n";

  std::string script = svg_path + ".gp";
  {
    std::ofstream f(script);
    f << gp.str();
    if (!f) return kv::Status::IoError("cannot write " + script);
  }
  // Spawned, not system(): file names reach gnuplot without a shell.
  std::string prog = "gnuplot";
  char* argv[] = {prog.data(), script.data(), nullptr};
  pid_t pid = 0;
  if (posix_spawnp(&pid, "gnuplot", nullptr, nullptr, argv, environ) != 0) {
    return kv::Status::Unavailable(
        "gnuplot not found: install gnuplot-nox (bash tools/setup.sh)");
  }
  int rc = 0;
  while (waitpid(pid, &rc, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(rc) || WEXITSTATUS(rc) != 0) {
    return kv::Status::Unavailable("gnuplot failed on " + script);
  }
  return kv::Status::Ok();
}

}  // namespace kvbench
