#include "kv/tools/flags.h"

#include <gflags/gflags.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string_view>
#include <vector>

namespace kv::tools {
namespace {

// gflags registers its own flags (--flagfile, --helpfull, --tab_completion…)
// from its sources; a tool's flags come from anywhere else.
bool IsGflagsInternal(const gflags::CommandLineFlagInfo& f) {
  std::string_view file = f.filename;
  const size_t slash = file.rfind('/');
  if (slash != std::string_view::npos) file.remove_prefix(slash + 1);
  return file.substr(0, 6) == "gflags";
}

bool IsHelpFlag(std::string_view name) {
  return name == "help" || name == "h" || name == "helpshort" ||
         name == "helpfull" || name == "?";
}

// Looks up one of the tool's own flags.
bool FindOwnFlag(const std::string& name, gflags::CommandLineFlagInfo* info) {
  return gflags::GetCommandLineFlagInfo(name.c_str(), info) &&
         !IsGflagsInternal(*info);
}

std::optional<int> UsageError(const ToolUsage& usage, const std::string& what) {
  std::cerr << usage.name << ": " << what << " (see " << usage.name
            << " --help)\n";
  return kExitUsage;
}

// Sets one flag argument (already known to start with '-'); may consume
// the next argv element as its value. Returns an exit code on a usage
// error or help.
std::optional<int> SetFlag(const ToolUsage& usage, std::string_view arg,
                           int argc, char** argv, int* i) {
  std::string_view body = arg.substr(arg.size() > 1 && arg[1] == '-' ? 2 : 1);
  std::string name(body.substr(0, body.find('=')));
  std::optional<std::string> value;
  if (body.find('=') != std::string_view::npos) {
    value = std::string(body.substr(body.find('=') + 1));
  }
  if (IsHelpFlag(name)) {
    PrintHelp(std::cout, usage);
    return kExitOk;
  }
  gflags::CommandLineFlagInfo info;
  if (!FindOwnFlag(name, &info)) {
    // --noverbose for a bool flag "verbose".
    if (!value && name.size() > 2 && name.compare(0, 2, "no") == 0 &&
        FindOwnFlag(name.substr(2), &info) && info.type == "bool") {
      name = name.substr(2);
      value = "false";
    } else {
      return UsageError(usage, "unknown flag --" + name);
    }
  }
  if (!value) {
    if (info.type == "bool") {
      value = "true";
    } else if (*i + 1 < argc) {
      value = argv[++*i];
    } else {
      return UsageError(usage, "flag --" + name + " needs a value (--" + name +
                                   "=" + info.type + ")");
    }
  }
  if (gflags::SetCommandLineOption(name.c_str(), value->c_str()).empty()) {
    return UsageError(usage, "invalid value '" + *value + "' for --" + name +
                                 " (expects " + info.type + ")");
  }
  return std::nullopt;
}

}  // namespace

std::optional<int> ParseFlags(int* argc, char*** argv, const ToolUsage& usage) {
  char** args = *argv;
  std::vector<char*> positionals;
  bool flags_done = false;
  for (int i = 1; i < *argc; i++) {
    std::string_view arg = args[i];
    if (flags_done || arg.size() < 2 || arg[0] != '-') {
      positionals.push_back(args[i]);
      if (usage.flags_before_positionals) flags_done = true;
      continue;
    }
    if (arg == "--") {
      flags_done = true;
      continue;
    }
    if (auto rc = SetFlag(usage, arg, *argc, args, &i)) return rc;
  }
  int n = 1;
  for (char* p : positionals) args[n++] = p;
  args[n] = nullptr;
  *argc = n;
  return std::nullopt;
}

void PrintHelp(std::ostream& out, const ToolUsage& usage) {
  out << usage.usage;
  if (!usage.usage.empty() && usage.usage.back() != '\n') out << "\n";
  std::vector<gflags::CommandLineFlagInfo> all;
  gflags::GetAllFlags(&all);
  std::vector<gflags::CommandLineFlagInfo> own;
  for (const auto& f : all) {
    if (!IsGflagsInternal(f)) own.push_back(f);
  }
  std::sort(own.begin(), own.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  if (!own.empty()) out << "\nflags:\n";
  for (const auto& f : own) {
    std::string head = "  --" + f.name;
    if (f.type != "bool") head += "=" + f.type;
    out << head;
    if (head.size() < 26) {
      out << std::string(26 - head.size(), ' ');
    } else {
      out << "\n" << std::string(26, ' ');
    }
    out << f.description;
    if (f.type == "double") {
      // gflags keeps 0.99 as "0.98999999999999999".
      char buf[32];
      snprintf(buf, sizeof(buf), "%g",
               strtod(f.default_value.c_str(), nullptr));
      out << " (default " << buf << ")";
    } else if (f.type == "string") {
      if (!f.default_value.empty())
        out << " (default '" << f.default_value << "')";
    } else {
      out << " (default " << f.default_value << ")";
    }
    out << "\n";
  }
  out << "  --help                  show this help\n";
  if (!usage.footer.empty()) out << "\n" << usage.footer;
}

}  // namespace kv::tools
