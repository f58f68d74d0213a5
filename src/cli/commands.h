// The subcommands of `gpurent`, registered by topic. Each function adds its subcommands to the
// app; when the command line picks one, its callback hands the Context the work to do (nothing
// runs during parsing). Every client command accepts the global --url, --api-key and -o flags.
//
// Names follow `gpurent <noun> <verb>`, with short forms for the everyday paths: `ps` for
// `instances ls`, `launch`/`show`/`logs`/`stop`/`start`/`rm` for `instances <verb>`,
// `balance`/`usage`/`transfers`/`topup` for `billing <verb>`, and `nodes` alone for `nodes ls`.
#pragma once

#include "cli/context.h"

namespace CLI {
class App;
}

namespace gpurent::cli {

void add_instance_commands(CLI::App& app, Context& ctx);
// jupyter (an instance's service in a browser) and exec (a command in a running instance).
void add_service_commands(CLI::App& app, Context& ctx);
// cp: local files into a running instance or a volume.
void add_copy_commands(CLI::App& app, Context& ctx);
void add_catalog_commands(CLI::App& app, Context& ctx);
void add_bench_commands(CLI::App& app, Context& ctx);
void add_billing_commands(CLI::App& app, Context& ctx);
// prices show|set|history|spot, and estimate (the launch flags, priced).
void add_price_commands(CLI::App& app, Context& ctx);
// After add_billing_commands: packages, and invoices/settings under `billing`.
void add_account_commands(CLI::App& app, Context& ctx);
void add_access_commands(CLI::App& app, Context& ctx);
void add_audit_commands(CLI::App& app, Context& ctx);
void add_node_commands(CLI::App& app, Context& ctx);
// job: batch jobs; reservation and quota: capacity booked ahead, tenants' limits.
void add_job_commands(CLI::App& app, Context& ctx);
void add_reservation_commands(CLI::App& app, Context& ctx);
void add_template_commands(CLI::App& app, Context& ctx);
// --template and --runtime, for the commands that launch work.
void add_template_options(CLI::App& command, std::string& template_name, std::string& runtime);
// volumes: persistent per-tenant volumes (create, ls, show, delete).
void add_volume_commands(CLI::App& app, Context& ctx);
// events: the event log.
void add_event_commands(CLI::App& app, Context& ctx);
// server, dev, agent and version.
void add_process_commands(CLI::App& app, Context& ctx);
// store migrate and backup: a whole state copied between stores (store/copy.h).
void add_store_commands(CLI::App& app, Context& ctx);
// simulate: the scheduler on files, in-process.
void add_simulate_commands(CLI::App& app, Context& ctx);

}  // namespace gpurent::cli
