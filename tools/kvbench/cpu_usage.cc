#include "cpu_usage.h"

#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

namespace kvbench {

CpuTimes SelfCpu() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto sec = [](const timeval& tv) { return tv.tv_sec + tv.tv_usec / 1e6; };
  return CpuTimes{sec(ru.ru_utime), sec(ru.ru_stime)};
}

kv::Result<CpuTimes> ProcessCpu(int pid) {
  std::string path = "/proc/" + std::to_string(pid) + "/stat";
  std::ifstream in(path);
  std::string line((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  if (!in && line.empty()) {
    return kv::Status::NotFound("no process " + std::to_string(pid) +
                                " (cannot read " + path + ")");
  }
  // The command name (field 2) is in parentheses and may hold spaces:
  // fields are counted from the last ')'. utime and stime are fields 14
  // and 15, i.e. the 12th and 13th after the state field.
  size_t close = line.rfind(')');
  if (close == std::string::npos) {
    return kv::Status::Corruption("unparsable " + path);
  }
  std::istringstream rest(line.substr(close + 1));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; i++) {
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  if (!rest) return kv::Status::Corruption("short stat line in " + path);
  double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  return CpuTimes{utime / tick, stime / tick};
}

}  // namespace kvbench
