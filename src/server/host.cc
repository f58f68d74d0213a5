#include "server/host.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <spdlog/spdlog.h>

#include "common/threads.h"

namespace gpurent::server {

ControllerHost::ControllerHost(asio::io_context& io, controller::Controller& controller,
                               store::Store& store)
    : io_(io), controller_(controller), store_(store), tick_timer_(io) {}

ControllerHost::~ControllerHost() { stop(); }

void ControllerHost::start(std::chrono::milliseconds tick_interval,
                           std::chrono::milliseconds stall_threshold, size_t rows_per_piece) {
  tick_interval_ = tick_interval;
  stall_threshold_ = stall_threshold;
  ticking_ = true;
  controller_.stream_placed_rows(
      [this](controller::ChangeSet piece) { enqueue_piece(std::move(piece)); }, rows_per_piece);
  committer_ = std::thread([this] {
    name_this_thread("committer");
    committer_loop();
  });
  schedule_tick();
}

void ControllerHost::stop() {
  ticking_ = false;
  tick_timer_.cancel();
  controller_.stream_placed_rows({}, 0);
  {
    std::lock_guard lock(queue_mutex_);
    stopping_ = true;
  }
  queue_cv_.notify_all();
  if (committer_.joinable()) committer_.join();
}

Status ControllerHost::commit_now() {
  auto changes = take_applied();
  if (changes.empty()) return {};
  return store_.commit(changes);
}

void ControllerHost::schedule_tick() {
  if (!ticking_) return;
  tick_timer_.expires_after(tick_interval_);
  tick_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || !ticking_) return;
    const auto late = asio::steady_timer::clock_type::now() - tick_timer_.expiry();
    if (late > stall_threshold_) {
      spdlog::warn("controller_host_stalled late_ms={}; node silence until now is forgiven",
                   std::chrono::duration_cast<std::chrono::milliseconds>(late).count());
      controller_.fleet().forgive_silence_until_now();
    }
    controller_.tick();
    GPURENT_EXPENSIVE_CHECK(controller_.check_invariants());
    auto changes = take_applied();
    if (!changes.empty()) {
      // Queued here, before any later command can queue its own changes: co_spawn starts its
      // coroutine only after a post, and a tick's older copies must never overwrite newer ones.
      auto changed_instances = std::move(changes.changed_instances);
      auto signal = queue_and_wake(changes);
      asio::co_spawn(io_, await_durable(std::move(signal), std::move(changed_instances)),
                     asio::detached);
    }
    schedule_tick();
  });
}

controller::ChangeSet ControllerHost::take_applied() {
  applied_ = false;
  return controller_.take_changes(controller::Controller::Form::kStoreRows);
}

asio::awaitable<void> ControllerHost::settle(controller::ChangeSet changes) {
  if (changes.empty() && all_durable()) return asio::post(io_, asio::use_awaitable);
  return commit(std::move(changes));
}

asio::awaitable<void> ControllerHost::commit(controller::ChangeSet changes) {
  // Moved out, not copied (an array's commit names 8,000 instances): the store writes none of it.
  auto changed_instances = std::move(changes.changed_instances);
  auto signal = queue_and_wake(changes);
  co_await await_durable(std::move(signal), std::move(changed_instances));
}

std::shared_ptr<asio::steady_timer> ControllerHost::queue_and_wake(controller::ChangeSet& changes) {
  const auto woken_nodes = std::move(changes.woken_nodes);
  auto signal = enqueue(std::move(changes));
  for (const auto& node : woken_nodes) notify("node:" + node);
  return signal;
}

std::shared_ptr<asio::steady_timer> ControllerHost::enqueue(controller::ChangeSet changes) {
  // A timer that never expires by itself serves as the completion signal: the committer posts
  // its cancellation back to this thread once the transaction is durable.
  auto signal = std::make_shared<asio::steady_timer>(io_, asio::steady_timer::time_point::max());
  {
    std::lock_guard lock(queue_mutex_);
    queue_.push_back({std::move(changes),
                      [this, signal] { asio::post(io_, [signal] { signal->cancel(); }); },
                      ++queued_});
  }
  queue_cv_.notify_one();
  return signal;
}

void ControllerHost::enqueue_piece(controller::ChangeSet piece) {
  {
    std::lock_guard lock(queue_mutex_);
    queue_.push_back({std::move(piece), {}, ++queued_, /*piece=*/true});
  }
  queue_cv_.notify_one();
}

asio::awaitable<void> ControllerHost::await_durable(std::shared_ptr<asio::steady_timer> signal,
                                                    std::vector<std::string> changed_instances) {
  boost::system::error_code ec;
  co_await signal->async_wait(asio::redirect_error(asio::use_awaitable, ec));
  for (const auto& instance : changed_instances) notify("instance:" + instance);
}

namespace {

// A commit that failed leaves the controller ahead of the store: the process ends at once, to
// protect the data; a restart (with a shared store, another server) rebuilds the state from what
// is stored. Exit code 3, as a leader that a later one deposed ends (server.cc): nothing is
// acknowledged that was not written, and nothing more is written.
void stop_on_failure(const Status& written) {
  if (written) return;
  spdlog::critical("store commit failed: {}; exiting", written.error().message);
  std::_Exit(3);
}

}  // namespace

void ControllerHost::committer_loop() {
  bool staged = false;  // the store's transaction holds pieces, and stays open for the rest
  std::deque<PendingCommit> batch;
  const auto merge_changes = [&batch](size_t from, size_t to) {
    controller::ChangeSet merged = std::move(batch[from].changes);
    for (size_t i = from + 1; i < to; ++i) merged.merge(std::move(batch[i].changes));
    return merged;
  };
  for (;;) {
    batch.clear();
    {
      std::unique_lock lock(queue_mutex_);
      queue_cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      // Stopping, and everything is written: a command queues its own entry as soon as it ends,
      // so no pieces wait for one.
      if (queue_.empty()) return;
      batch.swap(queue_);
    }
    // A command's pieces come before its own entry. Everything up to the last entry that is not a
    // piece commits now; the pieces after it are of a command still running.
    size_t whole = batch.size();
    while (whole > 0 && batch[whole - 1].piece) --whole;
    if (whole > 0) {
      controller::ChangeSet merged = merge_changes(0, whole);
      // A batch of barriers only (nothing changed) is durable once the batches before it are.
      if (staged || !merged.empty()) stop_on_failure(store_.commit(merged));
      staged = false;
      // Batches leave the queue in order: this entry's is the newest durable sequence.
      durable_.store(batch[whole - 1].sequence, std::memory_order_release);
      // Pieces hold instance and task rows only: what the hook reads (events, alerts) is here.
      if (after_commit_) after_commit_(merged);
      for (size_t i = 0; i < whole; ++i) {
        if (batch[i].done) batch[i].done();
      }
    }
    if (whole < batch.size()) {
      stop_on_failure(store_.stage(merge_changes(whole, batch.size())));
      staged = true;
    }
  }
}

asio::awaitable<void> ControllerHost::wait(const std::string& topic,
                                           std::chrono::milliseconds timeout) {
  auto timer = std::make_shared<asio::steady_timer>(io_, timeout);
  auto& list = waiters_[topic];
  std::erase_if(list, [](const auto& weak) { return weak.expired(); });
  list.push_back(timer);
  boost::system::error_code ec;
  co_await timer->async_wait(asio::redirect_error(asio::use_awaitable, ec));
}

void ControllerHost::notify(const std::string& topic) {
  const auto it = waiters_.find(topic);
  if (it == waiters_.end()) return;
  for (const auto& weak : it->second) {
    if (auto timer = weak.lock()) timer->cancel();
  }
  waiters_.erase(it);
}

}  // namespace gpurent::server
