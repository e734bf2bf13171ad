// An eventfd-backed FIFO of events: the one queue behind the tcp
// provider's CM event channels (CmQueue, tcp_cm_channel.h) and completion
// channels (TcpCompletionChannel, tcp_cq.h).
//
// Contract
//   - fd() is readable exactly while at least one event is queued, and
//     from Close() on: the eventfd counts in semaphore mode, and the
//     counter equals the number of queued events (both change under one
//     mutex) until Close() raises it for good. The one exception is
//     PushUncounted(): its events are not on the counter until Count() (the
//     thread that is about to take them spares the eventfd's write and
//     read; it calls Count() before it returns, for those it left).
//   - Get() hands events out in Push() order (MoveIf() appends to the
//     destination in source order). It blocks until an event is queued;
//     if the application set O_NONBLOCK on fd() it returns -EAGAIN
//     instead. After Close() it returns -EPIPE, and Close() wakes every
//     Get() blocked at that moment.
//   - Push() after Close() is refused (false) and leaves the event with
//     the caller.
//   - Events taken out by RemoveIf() and Close() are returned, so that the
//     caller destroys them outside the lock (a CmEvent may own a CmId).
//
// Errors of Get(): -EAGAIN (non-blocking fd, nothing queued), -EPIPE
// (closed), -EIO (the eventfd could not be read: the invariant broke),
// poll()'s -errno.
//
// Thread-safety: every method may be called from any thread. Lifetime:
// the queue must outlive every Get() on it; close it and join the waiters
// before destroying it.
#ifndef RPMA_TCP_EVENT_QUEUE_H_
#define RPMA_TCP_EVENT_QUEUE_H_

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <utility>

namespace rpma::prov::tcp {

// The eventfd operations behind EventQueue (event_queue.cc).
namespace event_fd {
int Create();                // a semaphore eventfd, or -errno
void Add(int fd, size_t n);  // counter += n
int Take(int fd, size_t n);  // counter -= n; -EIO if a read fails
void Raise(int fd);          // readable for good (Close)
bool NonBlocking(int fd);    // the application set O_NONBLOCK
int WaitReadable(int fd);    // 0, or poll()'s -errno (EINTR retried)
void Destroy(int fd);
}  // namespace event_fd

template <typename T>
class EventQueue {
 public:
  // -errno of eventfd() (EMFILE, ENFILE, ENOMEM).
  static int Create(std::unique_ptr<EventQueue>* out) {
    int fd = event_fd::Create();
    if (fd < 0) return fd;
    out->reset(new EventQueue(fd));
    return 0;
  }
  ~EventQueue() { event_fd::Destroy(fd_); }
  EventQueue(const EventQueue&) = delete;
  EventQueue& operator=(const EventQueue&) = delete;

  int fd() const { return fd_; }

  // Queues *ev (moved from) and returns true; false if closed.
  bool Push(T* ev) {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return false;
    events_.push_back(std::move(*ev));
    event_fd::Add(fd_, 1);
    return true;
  }

  // As Push, but the counter is raised only by the next Count(); Get and
  // TryGet take these first, with no eventfd read.
  bool PushUncounted(T* ev) {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return false;
    events_.push_back(std::move(*ev));
    ++uncounted_;
    return true;
  }

  // Puts the events PushUncounted queued on the counter.
  void Count() {
    std::lock_guard<std::mutex> lock(mu_);
    if (uncounted_ == 0) return;
    if (!closed_) event_fd::Add(fd_, uncounted_);
    uncounted_ = 0;
  }

  // The oldest event into *out (written only on success); see above.
  int Get(T* out) {
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (closed_) return -EPIPE;
        if (!events_.empty()) return TakeFront(out);
      }
      // Another Get() may take the event that wakes us: loop.
      if (event_fd::NonBlocking(fd_)) return -EAGAIN;
      int rc = event_fd::WaitReadable(fd_);
      if (rc != 0) return rc;
    }
  }

  // As Get() but never blocks: -EAGAIN when nothing is queued.
  int TryGet(T* out) {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return -EPIPE;
    if (events_.empty()) return -EAGAIN;
    return TakeFront(out);
  }

  // Removes the events for which pred(const T&) holds; returns them.
  template <typename Pred>
  std::deque<T> RemoveIf(Pred pred) {
    std::deque<T> removed;
    std::lock_guard<std::mutex> lock(mu_);
    Split(pred, &removed);
    return removed;
  }

  // Moves the events for which pred holds to the end of *to (kept here if
  // `to` is closed). Locks both queues.
  template <typename Pred>
  void MoveIf(Pred pred, EventQueue* to) {
    if (to == this) return;
    std::scoped_lock lock(mu_, to->mu_);
    if (to->closed_) return;
    std::deque<T> moved;
    Split(pred, &moved);
    event_fd::Add(to->fd_, moved.size());
    for (T& ev : moved) to->events_.push_back(std::move(ev));
  }

  // Refuses further events, wakes every waiter; returns what was queued.
  std::deque<T> Close() {
    std::lock_guard<std::mutex> lock(mu_);
    std::deque<T> out;
    if (closed_) return out;
    closed_ = true;
    uncounted_ = 0;
    out.swap(events_);
    event_fd::Raise(fd_);
    return out;
  }

 private:
  explicit EventQueue(int fd) : fd_(fd) {}

  // Moves the oldest event out (under mu_, not closed, not empty); an
  // uncounted one is taken off the tally first, so no read is needed.
  int TakeFront(T* out) {
    if (uncounted_ > 0) {
      --uncounted_;
    } else if (event_fd::Take(fd_, 1) != 0) {
      // Never fails: the counter is events_.size() - uncounted_ > 0.
      return -EIO;
    }
    *out = std::move(events_.front());
    events_.pop_front();
    return 0;
  }

  // Moves the events matching pred into *taken, keeping the others' order,
  // and keeps the counter in step: the uncounted tally goes first (it never
  // exceeds what is queued), the rest comes off the eventfd.
  template <typename Pred>
  void Split(Pred& pred, std::deque<T>* taken) {
    const size_t counted = events_.size() - uncounted_;
    std::deque<T> keep;
    for (T& ev : events_) (pred(ev) ? *taken : keep).push_back(std::move(ev));
    events_.swap(keep);
    uncounted_ = std::min(uncounted_, events_.size());
    if (!closed_)
      (void)event_fd::Take(fd_, counted - (events_.size() - uncounted_));
  }

  const int fd_;
  std::mutex mu_;
  std::deque<T> events_;
  size_t uncounted_ = 0;  // queued by PushUncounted, not on the counter yet
  bool closed_ = false;
};

}  // namespace rpma::prov::tcp

#endif  // RPMA_TCP_EVENT_QUEUE_H_
