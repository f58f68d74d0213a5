// events: the event log of the caller's objects (operators: the platform's too).
#include <CLI/App.hpp>
#include <memory>

#include "cli/commands.h"
#include "cli/views.h"

namespace gpurent::cli {
namespace {

struct EventOptions {
  std::string object_id;
  std::string kind;
  size_t tail = 50;
};

}  // namespace

void add_event_commands(CLI::App& app, Context& ctx) {
  auto options = std::make_shared<EventOptions>();
  auto* events = app.add_subcommand("events", "What happened to your instances, nodes and money")
                     ->group("Instances");
  events->add_option("object", options->object_id, "only events about this instance, node or job");
  events->add_option("--kind", options->kind,
                     "only this kind: node.down, instance.moved, instance.preempted, ...");
  events->add_option("--tail", options->tail, "show the last N (0: all)")->capture_default_str();
  events->callback([&ctx, options] {
    ctx.set_command([&ctx, options] {
      return ctx.call_and_show(
          [&](client::ApiClient& api) -> Result<client::Answer<std::vector<api::Event>>> {
            GPURENT_TRY(items, api.monitoring().list_events(options->object_id, options->kind));
            return last_items(std::move(items), options->tail);
          },
          [&ctx](const auto& value) { return events_view(value, ctx.now()); });
    });
  });
}

}  // namespace gpurent::cli
