// kvadmin's commands, separate from flag parsing so tests can call them.
// Each returns a process exit code: 0 ok, 1 the operation failed (message
// on stderr), 2 usage error, 3 check found problems.
#ifndef KV_TOOLS_KVADMIN_COMMANDS_H_
#define KV_TOOLS_KVADMIN_COMMANDS_H_

#include <cstdint>
#include <iosfwd>
#include <string>

#include "kv/status.h"
#include "kv/store/options.h"

namespace kv::kvadmin {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitCheckFailed = 3;

// "4096", "64K", "16M", "1G", "2T" (binary units, case-insensitive, an
// optional trailing "iB"/"B"). invalid_argument otherwise or on overflow.
Result<uint64_t> ParseSize(const std::string& text);
// "1.5 MiB" and the like.
std::string HumanBytes(uint64_t bytes);
// Prints "kvadmin: <status>" on err and returns kExitFailed.
int Fail(std::ostream& err, const Status& st);

int CreatePool(const std::string& path, uint64_t size, std::ostream& out,
               std::ostream& err);
int Info(const std::string& path, std::ostream& out, std::ostream& err);
int Check(const std::string& path, std::ostream& out, std::ostream& err);
// options.log_size 0: CreateLogSize (keyspace_sizing.h), not the whole
// free extent.
int KeyspaceCreate(const std::string& path, const std::string& name,
                   const store::KeyspaceOptions& options, std::ostream& out,
                   std::ostream& err);
int KeyspaceDrop(const std::string& path, const std::string& name,
                 std::ostream& out, std::ostream& err);
int KeyspaceList(const std::string& path, std::ostream& out, std::ostream& err);

}  // namespace kv::kvadmin

#endif  // KV_TOOLS_KVADMIN_COMMANDS_H_
