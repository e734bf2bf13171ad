#include "script.h"

#include <chrono>
#include <cstdio>
#include <string>
#include <unordered_set>
#include <vector>

#include "command_context.h"
#include "commands.h"
#include "tokenizer.h"

namespace kv::kvcli {
namespace {

using namespace command;

// One single-key line waiting in the batch.
struct Pending {
  size_t line;
  std::string_view name;  // "put", "get" or "del"
  std::vector<Token> args;
};

// put/set K V, get K, del K: the lines that may share a batch.
std::string_view BatchableName(const std::vector<Token>& tokens) {
  if (tokens.empty() || tokens[0].from_file) return {};
  const std::string_view name = CommandName(tokens[0].text);
  if (name == "put" && tokens.size() == 3) return name;
  if ((name == "get" || name == "del") && tokens.size() == 2) return name;
  return {};
}

struct Counts {
  size_t commands = 0, errors = 0, not_found = 0;
  int worst = 0;
  void Add(int code) {
    commands++;
    if (code == 1) not_found++;
    if (code > 1) errors++;
    if (code > worst) worst = code;
  }
};

class Runner {
 public:
  Runner(Session* session, Output* out, const ScriptOptions& o)
      : session_(session), out_(out), options_(o) {}

  // Runs the batch, then prints each line's reply in input order.
  void Flush() {
    if (pending_.empty()) return;
    bool quit = false;
    Context c{session_, out_, &quit};
    std::vector<Reply> replies(pending_.size());
    std::vector<size_t> op_of(pending_.size(), SIZE_MAX);
    Batch batch;
    Reply connect;
    Client* client = session_->Connected(&connect);
    for (size_t i = 0; i < pending_.size(); i++) {
      const Pending& p = pending_[i];
      if (client == nullptr) {
        replies[i] = connect;
        continue;
      }
      const std::string key = KeyOf(p.args[0]);
      if (p.name == "put") {
        std::string value;
        if (!ValueOf(p.args[1], &value, &replies[i])) continue;
        batch.Put(key, value);
      } else if (p.name == "get") {
        batch.Get(key);
      } else {
        batch.Delete(key);
      }
      op_of[i] = batch.size() - 1;
    }
    if (client != nullptr && batch.size() > 0) {
      // A connection error is also each unfinished op's own status.
      (void)client->Execute(&batch);
    }
    // Replies are built after the batch: an error reply may drop the
    // connection (Session::Lost), and the batch no longer needs it.
    for (size_t i = 0; i < pending_.size(); i++) {
      const Pending& p = pending_[i];
      if (op_of[i] != SIZE_MAX) {
        const Batch::Result& res = batch.result(op_of[i]);
        if (p.name == "put") {
          replies[i] = PutReply(c, res.status, res.version.sequence);
        } else if (p.name == "get") {
          replies[i] = GetReply(c, KeyOf(p.args[0]), res.status, res.value);
        } else {
          replies[i] = DelReply(c, res.status, res.had_previous);
        }
      }
      out_->set_line(p.line);
      counts_.Add(out_->Print(p.name, replies[i]));
    }
    out_->set_line(0);
    out_->Flush();
    pending_.clear();
    keys_.clear();
  }

  // Returns false after quit/exit.
  bool Line(size_t number, const std::string& line) {
    auto tokens = Tokenize(line);
    if (!tokens.ok()) {
      Flush();
      Reply r;
      r.status = tokens.status();
      r.exit_code = 2;
      out_->set_line(number);
      counts_.Add(out_->Print("", r));
      return true;
    }
    if (tokens->empty()) return true;
    const std::string_view name = BatchableName(*tokens);
    if (!name.empty()) {
      // A later line on a key of the batch must see the earlier one done.
      std::string key = KeyOf((*tokens)[1]);
      if (keys_.count(key) != 0) Flush();
      keys_.insert(std::move(key));
      pending_.push_back(
          {number, name,
           std::vector<Token>(tokens->begin() + 1, tokens->end())});
      if (pending_.size() >= options_.batch_lines) Flush();
      return true;
    }
    Flush();
    bool quit = false;
    out_->set_line(number);
    const int code = RunCommand(session_, out_, *tokens, &quit);
    out_->set_line(0);
    out_->Flush();
    if (!quit) counts_.Add(code);
    return !quit;
  }

  const Counts& counts() const { return counts_; }

 private:
  Session* const session_;
  Output* const out_;
  const ScriptOptions options_;
  std::vector<Pending> pending_;
  std::unordered_set<std::string> keys_;
  Counts counts_;
};

}  // namespace

int RunScript(Session* session, Output* out, std::istream& in,
              const ScriptOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  Runner runner(session, out, options);
  std::string line;
  size_t number = 0;
  while (std::getline(in, line)) {
    if (!runner.Line(++number, line)) break;
  }
  runner.Flush();
  const Counts& n = runner.counts();
  if (options.summary != nullptr) {
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    char rate[64];
    snprintf(rate, sizeof(rate), "%.1f s (%.0f commands/s)", s,
             s > 0 ? static_cast<double>(n.commands) / s : 0.0);
    *options.summary << "done: " << n.commands << " commands, " << n.errors
                     << " errors, " << n.not_found << " not found, " << number
                     << " lines in " << rate << "\n"
                     << std::flush;
  }
  return n.worst;
}

}  // namespace kv::kvcli
