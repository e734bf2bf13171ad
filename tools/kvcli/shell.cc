#include "shell.h"

#include <editline/readline.h>
#include <pthread.h>
#include <pwd.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include <cctype>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>
#include <vector>

#include "commands.h"
#include "interrupt.h"
#include "tokenizer.h"

namespace kv::kvcli {
namespace {

constexpr int kHistoryLines = 1000;

// Tokenizes and runs one line; a line that does not tokenize is a usage
// error printed through `out`.
int RunLine(Session* session, Output* out, const std::string& line,
            bool* quit) {
  auto tokens = Tokenize(line);
  if (!tokens.ok()) {
    Reply r;
    r.status = tokens.status();
    r.exit_code = 2;
    return out->Print("", r);
  }
  return RunCommand(session, out, *tokens, quit);
}

// libedit's completion callbacks are plain functions: the words they offer
// live here for the duration of one completion.
std::vector<std::string>* g_candidates = nullptr;
Session* g_session = nullptr;

char* NextCandidate(const char* text, int state) {
  static size_t next;
  if (state == 0) next = 0;
  const size_t len = strlen(text);
  while (g_candidates != nullptr && next < g_candidates->size()) {
    const std::string& c = (*g_candidates)[next++];
    if (c.compare(0, len, text) == 0) return strdup(c.c_str());
  }
  return nullptr;
}

// Keyspace names for `use`, asked of the server only when connected (a
// completion never waits on a connect).
std::vector<std::string> KeyspaceNames() {
  std::vector<std::string> names;
  Reply r;
  if (g_session == nullptr || !g_session->connected()) return names;
  auto text = g_session->Connected(&r)->Info(Client::InfoTopic::kKeyspaces);
  if (!text.ok()) return names;
  std::istringstream in(*text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) names.push_back(line);
  }
  return names;
}

char** Complete(const char* text, int start, int /*end*/) {
  rl_attempted_completion_over = 1;  // never fall back to file names
  static std::vector<std::string> candidates;
  candidates.clear();
  std::istringstream before(std::string(rl_line_buffer, start));
  std::vector<std::string> words;
  for (std::string w; before >> w;) words.push_back(w);
  for (std::string& w : words) {
    for (char& ch : w)
      ch = static_cast<char>(tolower(static_cast<unsigned char>(ch)));
  }
  if (words.empty() || (words.size() == 1 && words[0] == "help")) {
    for (const CommandInfo& c : CommandTable()) {
      candidates.emplace_back(c.name);
      std::istringstream aliases{std::string(c.aliases)};
      for (std::string a; aliases >> a;) candidates.push_back(a);
    }
  } else if (words.size() == 1 && words[0] == "use") {
    candidates = KeyspaceNames();
  } else {
    return nullptr;
  }
  g_candidates = &candidates;
  return rl_completion_matches(text, NextCandidate);
}

// Ctrl-C while a line is edited: the terminal's ISIG is off while
// readline() runs (ReadLine), so ^C reaches libedit as a key, bound to
// Interrupt. No SIGINT is sent, to kvcli or to the script that started it
// (tools/run.sh traps INT and stops its server). rl_done makes readline()
// return NULL at once; the flag tells it apart from Ctrl-D. While a
// command runs the terminal has ISIG again: Ctrl-C interrupts the command
// (interrupt.h) and the prompt comes back.
bool g_interrupted = false;

int Interrupt(int /*count*/, int /*key*/) {
  g_interrupted = true;
  rl_done = 1;
  return 0;
}

// Edit mode without ISIG. libedit's readline() resets its terminal masks
// on every call, so `setty -d -isig` goes in this hook, which runs after
// that and before the terminal enters edit mode.
int NoIsigInEditMode() {
  rl_parse_and_bind("setty -d -isig");
  return 0;
}

// readline() with the terminal's ISIG off from before the prompt is shown
// (edit mode alone would leave a moment, before it starts, in which a ^C
// is still a signal); restored when the line is read.
// The terminal as the shell left it, for Suspend to hand back.
termios g_shell_termios{};

char* ReadLine(const std::string& prompt) {
  termios saved;
  const bool tty = tcgetattr(STDIN_FILENO, &saved) == 0;
  if (tty) {
    g_shell_termios = saved;
    termios t = saved;
    t.c_lflag &= ~static_cast<tcflag_t>(ISIG);
    tcsetattr(STDIN_FILENO, TCSANOW, &t);
  }
  char* raw = readline(prompt.c_str());
  if (tty) tcsetattr(STDIN_FILENO, TCSANOW, &saved);
  return raw;
}

// Ctrl-Z at the prompt: with ISIG off it is a key too; it suspends the
// process group as the terminal would. Done here rather than by libedit's
// SIGTSTP handler: that one re-sends the signal from inside the handler,
// where SIGTSTP is blocked, so another thread (the client's engine) could
// take the stop while this thread went on and redrew the line before the
// stop, leaving nothing to redraw after fg (seen once in CI). Here the
// signal has its default action and is unblocked on this thread, which the
// kernel then picks: kill() returns only after fg.
int Suspend(int /*count*/, int /*key*/) {
  termios edit;
  const bool tty = tcgetattr(STDIN_FILENO, &edit) == 0;
  if (tty) tcsetattr(STDIN_FILENO, TCSADRAIN, &g_shell_termios);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  struct sigaction old_tstp {
  }, old_cont{};
  sigaction(SIGTSTP, &dfl, &old_tstp);
  sigaction(SIGCONT, &dfl, &old_cont);  // libedit's would redraw as well
  sigset_t tstp, old_mask;
  sigemptyset(&tstp);
  sigaddset(&tstp, SIGTSTP);
  pthread_sigmask(SIG_UNBLOCK, &tstp, &old_mask);
  kill(0, SIGTSTP);
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  sigaction(SIGCONT, &old_cont, nullptr);
  sigaction(SIGTSTP, &old_tstp, nullptr);
  if (tty) tcsetattr(STDIN_FILENO, TCSADRAIN, &edit);
  rl_forced_update_display();  // after fg: the prompt and the line again
  return 0;
}

void SaveHistory(const std::string& path) {
  if (path.empty()) return;
  // Values typed at the prompt may be secrets: the file is the user's only.
  const mode_t old = umask(077);
  write_history(path.c_str());
  umask(old);
}

}  // namespace

std::string DefaultHistoryPath() {
  const char* home = getenv("HOME");
  if (home == nullptr || *home == '\0') {
    const passwd* pw = getpwuid(getuid());
    home = pw != nullptr ? pw->pw_dir : nullptr;
  }
  if (home == nullptr || *home == '\0') return "";
  return std::string(home) + "/.rpkv_history";
}

int RunInteractive(Session* session, Output* out,
                   const std::string& history_path) {
  rl_readline_name = "kvcli";
  rl_attempted_completion_function = Complete;
  g_session = session;
  rl_initialize();
  rl_pre_input_hook = NoIsigInEditMode;
  rl_add_defun("kvcli-interrupt", Interrupt, 3);  // ^C
  rl_add_defun("kvcli-suspend", Suspend, 26);     // ^Z
  rl_parse_and_bind("bind ^L ed-clear-screen");
  stifle_history(kHistoryLines);
  if (!history_path.empty()) read_history(history_path.c_str());

  // Connect up front so that a server that is not there is said at once
  // (the shell still opens; each command tries again).
  Reply r;
  if (session->Connected(&r) == nullptr) out->Print("connect", r);

  bool quit = false;
  while (!quit) {
    const std::string prompt = session->Prompt();
    g_interrupted = false;
    rl_done = 0;
    // Caught from before the terminal gets ISIG back at the end of
    // ReadLine, so that a Ctrl-C typed right after Enter stops the
    // command instead of ending kvcli (interrupt.h).
    CommandInterrupt interrupt;
    char* raw = ReadLine(prompt);
    if (g_interrupted) {  // Ctrl-C: drop the line, show a new prompt
      free(raw);
      std::cout << "^C\n" << std::flush;
      continue;
    }
    if (raw == nullptr) {  // Ctrl-D
      std::cout << "\n" << std::flush;
      break;
    }
    std::string line(raw);
    free(raw);
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    add_history(line.c_str());
    SaveHistory(history_path);
    // Ctrl-C now interrupts the command, not kvcli; the parent
    // (tools/run.sh) lets kvcli decide.
    RunLine(session, out, line, &quit);
  }
  g_session = nullptr;
  return 0;
}

}  // namespace kv::kvcli
