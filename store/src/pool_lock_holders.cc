#include "pool_lock_holders.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <vector>

namespace kv::store {
namespace {

std::string Comm(long pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  std::getline(f, name);
  return name.empty() ? "a process" : name;
}

}  // namespace

std::string PoolLockHolders(int fd) {
  struct stat sb;
  if (fstat(fd, &sb) != 0) return "open by another process";
  // A /proc/locks line: "1: FLOCK  ADVISORY  WRITE 10264 fe:00:10953381 0
  // EOF" — the device as hex major:minor, then the inode.
  char dev[64];
  snprintf(dev, sizeof(dev), "%02x:%02x:%llu", major(sb.st_dev),
           minor(sb.st_dev), static_cast<unsigned long long>(sb.st_ino));
  std::ifstream locks("/proc/locks");
  std::string line;
  std::string writers, readers;
  while (std::getline(locks, line)) {
    std::istringstream in(line);
    std::string id, kind, advisory, mode, where;
    long pid = 0;
    in >> id >> kind;
    if (kind == "->") in >> kind;  // a waiter, listed under the holder
    in >> advisory >> mode >> pid >> where;
    if (kind != "FLOCK" || where != dev || pid <= 0) continue;
    std::string& list = mode == "WRITE" ? writers : readers;
    if (!list.empty()) list += ", ";
    list += Comm(pid) + " (pid " + std::to_string(pid) + ")";
  }
  if (!writers.empty()) return "held for writing by " + writers;
  if (!readers.empty()) return "held for reading by " + readers;
  return "open by another process";
}

}  // namespace kv::store
