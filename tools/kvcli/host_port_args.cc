#include "host_port_args.h"

namespace kv::kvcli {
namespace {

bool ValidPort(std::string_view p) {
  if (p.empty() || p.size() > 5) return false;
  unsigned v = 0;
  for (char c : p) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<unsigned>(c - '0');
  }
  return v >= 1 && v <= 65535;
}

bool LooksLikeFlag(std::string_view s) { return s.size() > 1 && s[0] == '-'; }

}  // namespace

PreParsed PreParseArgs(
    const std::vector<std::string>& argv,
    const std::function<bool(std::string_view)>& takes_value,
    const std::function<bool(std::string_view)>& is_command) {
  PreParsed p;
  if (!argv.empty()) p.args.push_back(argv[0]);
  size_t i = 1;
  for (; i < argv.size(); i++) {
    const std::string& arg = argv[i];
    if (arg == "--" || !LooksLikeFlag(arg)) break;  // the command starts
    const bool has_next = i + 1 < argv.size();
    const std::string next = has_next ? argv[i + 1] : "";
    if (arg == "-h") {
      if (!has_next) {
        p.args.push_back("--help");
        continue;
      }
      if (LooksLikeFlag(next) || is_command(next)) {
        p.error =
            "flag -h needs a HOST before the command (-h HOST; -h "
            "alone shows the help)";
        return p;
      }
      p.host = next;
      i++;
      continue;
    }
    if (arg == "-p") {
      if (!has_next || LooksLikeFlag(next) || is_command(next)) {
        p.error = "flag -p needs a PORT before the command (-p PORT)";
        return p;
      }
      if (!ValidPort(next)) {
        p.error = "invalid value '" + next + "' for -p (a port, 1-65535)";
        return p;
      }
      p.port = next;
      i++;
      continue;
    }
    p.args.push_back(arg);
    // --name VALUE: is VALUE really the value?
    std::string_view body(arg);
    body.remove_prefix(arg[1] == '-' ? 2 : 1);
    if (body.find('=') != std::string_view::npos || !takes_value(body)) {
      continue;
    }
    if (has_next && (LooksLikeFlag(next) || is_command(next))) {
      p.error = "flag --" + std::string(body) + " is missing its value (--" +
                std::string(body) + "=VALUE); '" + next + "' is " +
                (LooksLikeFlag(next) ? "a flag" : "a command");
      return p;
    }
    if (has_next) p.args.push_back(argv[++i]);
  }
  for (; i < argv.size(); i++) p.args.push_back(argv[i]);
  return p;
}

std::optional<std::string> ServerAddress(
    const std::string& server, const std::optional<std::string>& host,
    const std::optional<std::string>& port) {
  const size_t colon = server.rfind(':');
  if (colon == std::string::npos || colon == 0) return std::nullopt;
  std::string h = server.substr(0, colon);
  std::string p = server.substr(colon + 1);
  if (!ValidPort(p)) return std::nullopt;
  if (h.size() > 1 && h.front() == '[' && h.back() == ']') {
    h = h.substr(1, h.size() - 2);
  }
  if (host) h = *host;
  if (port) p = *port;
  if (h.empty()) return std::nullopt;
  if (h.find(':') != std::string::npos) h = "[" + h + "]";  // IPv6
  return h + ":" + p;
}

}  // namespace kv::kvcli
