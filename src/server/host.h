// The controller host: the shell that gives the deterministic controller a thread, durability and
// wake-ups.
//
// - One owner: the controller is touched only from the io_context's single thread (HTTP handlers
//   and the tick timer run there), so it needs no lock.
// - Durable before acknowledged: mutate() applies a command, hands the resulting ChangeSet to the
//   committer thread, and resumes the caller only when the store has committed it. The committer
//   merges everything queued while it was writing into one transaction (group commit), so many
//   concurrent commands share one fsync. If the store fails, memory and disk have diverged and the
//   process stops (fail-stop, as etcd does on a WAL error): a restart rebuilds from the store.
// - Wake-ups: wait() parks a coroutine on a topic ("node:<id>", "instance:<id>") until notify() or
//   a timeout. Committed changes notify the instances they touched. The nodes whose desired state
//   changed are woken as soon as the change is queued: the desired-state answer builds itself
//   while the committer writes, and holds itself behind durable() (an agent must never act on
//   state a crash could lose), so an array's thousand answers are ready when its commit is.
// - Long commands stream: a scheduling pass hands the rows of what it has placed to the committer
//   kRowsPerPiece at a time (Controller::stream_placed_rows), and the committer writes them into
//   a transaction it leaves open until the command's own ChangeSet commits it. The store so
//   writes an array's member rows while the API thread still places the rest, instead of after.
#pragma once

#include <utility>

#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "common/assert.h"
#include "controller/controller.h"
#include "store/store.h"

namespace gpurent::server {

namespace asio = boost::asio;

inline constexpr std::chrono::milliseconds kTickStallThreshold{2'000};
// Placed instances' rows per piece a long command hands the committer while it runs.
inline constexpr size_t kRowsPerPiece = 1'000;

class ControllerHost {
 public:
  ControllerHost(asio::io_context& io, controller::Controller& controller, store::Store& store);
  ~ControllerHost();

  // Starts the committer thread and the tick timer. A tick that runs more than stall_threshold
  // late means this thread was stalled (a long command): agents' reports may have waited unread
  // meanwhile, so the controller forgives the silence up to then (no node is marked down for it).
  void start(std::chrono::milliseconds tick_interval,
             std::chrono::milliseconds stall_threshold = kTickStallThreshold,
             size_t rows_per_piece = kRowsPerPiece);
  // Stops ticking and drains the committer; pending commits complete first.
  void stop();

  controller::Controller& controller() { return controller_; }

  // Runs fn(controller) and resumes once its changes, and every change queued before them, are
  // durable; returns fn's result. A command that changed nothing (an idempotent replay) still
  // waits: what it reports may have been created by a command whose commit is in flight.
  template <class Fn>
  asio::awaitable<std::invoke_result_t<Fn, controller::Controller&>> mutate(Fn fn) {
    auto result = apply(std::move(fn));
    co_await commit_applied();
    co_return result;
  }

  // Runs fn(controller) and leaves its changes pending: they are committed by the next commit of
  // anyone (a mutate, a tick, durable(), commit_applied()). Whoever acknowledges what fn did
  // must first co_await commit_applied(). A request that writes and is audited applies its
  // command so, and commits it together with its audit entry: one transaction, one fsync.
  template <class Fn>
  std::invoke_result_t<Fn, controller::Controller&> apply(Fn fn) {
    auto result = fn(controller_);
    GPURENT_EXPENSIVE_CHECK(controller_.check_invariants());
    applied_ = true;
    return result;
  }
  // Resumes once everything applied and queued so far is durable.
  asio::awaitable<void> commit_applied() { return settle(take_applied()); }

  // Resumes once everything applied or queued so far is durable: a read that must not reveal
  // uncommitted state (the desired set an agent will act on) waits on this before answering.
  asio::awaitable<void> durable() { return commit_applied(); }
  // Whether everything applied or queued so far is durable already, so that such a read need
  // not wait: a thousand watches woken by one commit would otherwise each wait for another.
  bool all_durable() const {
    return !applied_ && durable_.load(std::memory_order_acquire) == queued_;
  }

  // Called on the committer thread with each batch once it is durable (the alert webhooks): it
  // must be quick and must not touch the controller. Set before start().
  void set_after_commit(std::function<void(const controller::ChangeSet&)> hook) {
    after_commit_ = std::move(hook);
  }

  // Commits synchronously (start-up only, before the io_context runs).
  Status commit_now();

  // Parks until notify(topic) or the timeout.
  asio::awaitable<void> wait(const std::string& topic, std::chrono::milliseconds timeout);
  void notify(const std::string& topic);

 private:
  // Queues the changes for the committer at once (so commits keep the order in which the
  // controller made them), wakes the nodes they concern, and resumes when they are durable; then
  // wakes the instances' waiters.
  asio::awaitable<void> commit(controller::ChangeSet changes);
  // commit(), or, when there is nothing to write and everything queued is durable already, a
  // mere post to this thread: most agent reports change nothing durable, and each would otherwise
  // wake the committer and wait for its answer. A plain function, not a coroutine that returns
  // early: such a coroutine (GCC 12, Boost 1.74) corrupted the heap (docs/architecture.md).
  asio::awaitable<void> settle(controller::ChangeSet changes);
  // The controller's changes since the last take, in the store's form (applied_ is cleared).
  controller::ChangeSet take_applied();
  std::shared_ptr<asio::steady_timer> enqueue(controller::ChangeSet changes);
  // Queues a piece of the command in progress (stream_placed_rows): written, not committed.
  void enqueue_piece(controller::ChangeSet piece);
  // Queues the changes (their woken nodes notified at once); the signal of their durability.
  std::shared_ptr<asio::steady_timer> queue_and_wake(controller::ChangeSet& changes);
  asio::awaitable<void> await_durable(std::shared_ptr<asio::steady_timer> signal,
                                      std::vector<std::string> changed_instances);
  void committer_loop();
  void schedule_tick();

  struct PendingCommit {
    controller::ChangeSet changes;
    std::function<void()> done;  // posted back to the io_context; none for a piece
    uint64_t sequence = 0;       // enqueue order, from 1
    bool piece = false;          // of a command still running: its transaction stays open
  };

  asio::io_context& io_;
  controller::Controller& controller_;
  store::Store& store_;
  asio::steady_timer tick_timer_;
  std::chrono::milliseconds tick_interval_{1000};
  std::chrono::milliseconds stall_threshold_{kTickStallThreshold};
  bool ticking_ = false;
  bool applied_ = false;  // apply() ran since the controller's changes were last taken

  std::mutex queue_mutex_;
  std::condition_variable queue_cv_;
  std::deque<PendingCommit> queue_;   // bounded by the commands in flight (one per connection)
  uint64_t queued_ = 0;               // the last sequence enqueued (the io thread's)
  std::atomic<uint64_t> durable_{0};  // the last sequence committed (the committer sets it)
  bool stopping_ = false;
  std::thread committer_;
  std::function<void(const controller::ChangeSet&)> after_commit_;

  std::unordered_map<std::string, std::vector<std::weak_ptr<asio::steady_timer>>> waiters_;
};

}  // namespace gpurent::server
