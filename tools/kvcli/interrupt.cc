#include "interrupt.h"

#include <unistd.h>

namespace kv::kvcli {
namespace {

volatile sig_atomic_t g_interrupts = 0;

void OnSigint(int sig) {
  const sig_atomic_t before = g_interrupts;
  g_interrupts = before + 1;
  if (before == 0) {
    static const char kNote[] = "^C\n";
    (void)!write(STDERR_FILENO, kNote, sizeof(kNote) - 1);
    return;
  }
  // The command did not stop: the second Ctrl-C ends kvcli as usual.
  signal(sig, SIG_DFL);
  raise(sig);
}

}  // namespace

CommandInterrupt::CommandInterrupt() {
  g_interrupts = 0;
  struct sigaction sa {};
  sa.sa_handler = OnSigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a blocked read returns EINTR
  sigaction(SIGINT, &sa, &saved_);
}

CommandInterrupt::~CommandInterrupt() {
  sigaction(SIGINT, &saved_, nullptr);
  g_interrupts = 0;
}

bool Interrupted() { return g_interrupts > 0; }

}  // namespace kv::kvcli
