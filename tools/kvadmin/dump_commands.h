// kvadmin dump / load: a real backup of keys and values (offline), in the
// streaming format of dump_format.h / docs/dump_format.md.
//
// Thread-safety: one command per process.
#ifndef KV_TOOLS_KVADMIN_DUMP_COMMANDS_H_
#define KV_TOOLS_KVADMIN_DUMP_COMMANDS_H_

#include <functional>
#include <istream>
#include <memory>
#include <ostream>
#include <string>

#include "kv/status.h"

namespace kv::kvadmin {

// Writes every key and value of `keyspace` ("" : every keyspace) of the
// pool to the new file `out` (refused when it exists; written under
// OUT.tmp and renamed when complete, so a failed dump leaves no file that
// looks whole). The pool must not be held by kvserver.
int Dump(const std::string& pool, const std::string& out,
         const std::string& keyspace, std::ostream& os, std::ostream& err);

// Loads a dump into the pool: checks the whole file first (every
// checksum, the end frame's counts; a bad frame is refused naming its
// offset, and nothing is loaded), then creates each keyspace with the
// dump's geometry (or uses an existing one that holds no keys) and writes
// every record. `keyspace`: load a one-keyspace dump under this name.
int Load(const std::string& pool, const std::string& in,
         const std::string& keyspace, std::ostream& os, std::ostream& err);

// Load's body over a source opened once per pass (Load opens the file
// `in` names; a test hands it one that changes between the passes). The
// second pass is checked against the first: a source that holds other
// keyspaces then stops the load (corruption) instead of reading past what
// was checked.
using DumpSource = std::function<Result<std::unique_ptr<std::istream>>()>;
int LoadFrom(const std::string& pool, const std::string& in,
             const DumpSource& open, const std::string& keyspace,
             std::ostream& os, std::ostream& err);

}  // namespace kv::kvadmin

#endif  // KV_TOOLS_KVADMIN_DUMP_COMMANDS_H_
