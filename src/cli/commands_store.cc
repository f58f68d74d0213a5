// store migrate and backup: an installation's whole state moved between stores, or copied while
// its servers run. Both work on the databases directly (no server), so they need the database's
// credentials, not an API key.
#include <fmt/format.h>

#include <CLI/App.hpp>
#include <filesystem>
#include <memory>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/output.h"
#include "common/json.h"
#include "store/copy.h"

namespace gpurent::cli {
namespace {

Status copy(Context& ctx, const std::string& from_name, const std::string& to_name) {
  auto from = store::open_store_named(from_name);
  if (!from) return fail(std::move(from).error());
  auto to = store::open_store_named(to_name);
  if (!to) return fail(std::move(to).error());
  auto report = store::copy_store(**from, **to);
  if (!report) return fail(std::move(report).error());
  if (ctx.output() == OutputFormat::kJson) {
    ctx.out() << pretty_json({{"tenants", report->tenants},
                              {"instances", report->instances},
                              {"transfers", report->transfers},
                              {"events", report->events}});
  } else {
    ctx.out() << fmt::format(
        "Copied {} tenants, {} instances, {} ledger transfers and {} events into {}.\n",
        report->tenants, report->instances, report->transfers, report->events, to_name);
  }
  return {};
}

}  // namespace

void add_store_commands(CLI::App& app, Context& ctx) {
  auto* store = app.add_subcommand("store", "Move a control plane's state between stores");
  store->group("Processes");
  store->require_subcommand(1);
  auto migrate_flags = std::make_shared<std::pair<std::string, std::string>>();
  auto* migrate = store->add_subcommand(
      "migrate",
      "Copy every row of one store into another, empty one (stop the servers first, then point "
      "them at the new store)");
  migrate
      ->add_option("--from", migrate_flags->first,
                   "sqlite:DATA_DIR, sqlite:FILE.db or postgres://...")
      ->required();
  migrate->add_option("--to", migrate_flags->second, "an empty store, named the same ways")
      ->required();
  migrate->callback([&ctx, migrate_flags] {
    ctx.set_command(
        [&ctx, migrate_flags] { return copy(ctx, migrate_flags->first, migrate_flags->second); });
  });

  auto backup_flags = std::make_shared<std::pair<std::string, std::string>>();
  auto* backup = app.add_subcommand(
      "backup",
      "Copy a store, while its servers run, into a new SQLite file (one consistent view; "
      "restore with `gpurent store migrate --from sqlite:FILE`)");
  backup->group("Processes");
  backup
      ->add_option("--store", backup_flags->first,
                   "sqlite:DATA_DIR, sqlite:FILE.db or postgres://...")
      ->required();
  backup->add_option("--output", backup_flags->second, "the backup file to create (FILE.db)")
      ->required();
  backup->callback([&ctx, backup_flags] {
    ctx.set_command([&ctx, backup_flags]() -> Status {
      if (std::filesystem::exists(backup_flags->second)) {
        return fail(usage_error(
            fmt::format("{} exists: a backup goes into a new file", backup_flags->second)));
      }
      return copy(ctx, backup_flags->first, "sqlite:" + backup_flags->second);
    });
  });
}

}  // namespace gpurent::cli
