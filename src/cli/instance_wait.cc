#include "cli/instance_wait.h"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "cli/output.h"

namespace gpurent::cli {
namespace {

constexpr auto kWaitPollInterval = std::chrono::seconds(1);

}  // namespace

Result<client::Answer<api::Instance>> wait_until(Context& ctx, client::ApiClient& api,
                                                 client::Answer<api::Instance> instance,
                                                 const Goal& goal, std::chrono::seconds timeout) {
  const std::string id = instance.value.id;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string reported;
  const auto among = [](const std::vector<std::string_view>& states, std::string_view state) {
    return std::find(states.begin(), states.end(), state) != states.end();
  };
  for (;;) {
    const std::string state(model::to_string(instance.value.state));
    if (state != reported) {
      ctx.err() << fmt::format("{}: {}\n", sanitize(id), sanitize(state)) << std::flush;
      reported = state;
    }
    if (among(goal.done, state)) return instance;
    // A quick command can run and finish between two polls: it ran, which is what waiting for
    // "running" asks, so exiting 0 is no failure.
    const bool ran_and_finished = &goal == &kRunning && state == "stopped" &&
                                  instance.value.started_at && instance.value.exit_code == 0;
    if (ran_and_finished) return instance;
    if (among(goal.unreachable, state)) {
      const std::string& reason = instance.value.reason;
      return fail(Error::conflict(
          fmt::format("instance_not_{}", goal.name),
          fmt::format("instance {} is {}{}{}", id, state, reason.empty() ? "" : ": ", reason)));
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return fail(Error{ErrorKind::kUnavailable, "wait_timeout",
                        fmt::format("instance {} is still {} after {}", id, state,
                                    format_duration(timeout.count()))});
    }
    std::this_thread::sleep_for(kWaitPollInterval);
    GPURENT_TRY(fresh, api.instances().get(id));
    instance = std::move(fresh);
  }
}

}  // namespace gpurent::cli
