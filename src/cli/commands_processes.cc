// The process roles of the one binary (server, dev, agent) and `version`.
#include <fmt/format.h>

#include <CLI/App.hpp>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "agent/agent.h"
#include "agent/runtime/workload_users.h"
#include "agent/sim_fleet.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/output.h"
#include "server/server.h"

namespace gpurent::cli {
namespace {

// What `gpurent dev` credits the bootstrap tenant, so `gpurent launch` works at once.
// Enough for the README's examples: the sample package (1,500) and a reserved week (2,722).
constexpr long long kDevBootstrapCreditMicros = 10000 * kMicrosPerUnit;

struct ServerFlags {
  std::string listen;
  std::string data_dir;
  std::string store;
  std::string advertise_url;
  std::string admin_key;
  std::string config;
};

void add_server_flags(CLI::App& command, ServerFlags& flags) {
  command.add_option("--listen", flags.listen, "host:port to listen on (port 0: any free port)")
      ->default_str(server::ServerOptions{}.listen);
  command.add_option("--data-dir", flags.data_dir, "where the store lives")
      ->default_str(server::ServerOptions{}.data_dir);
  command.add_option("--store", flags.store,
                     "a PostgreSQL database several servers share (postgres://user@host/db): "
                     "one leads, the others stand by (default: SQLite in the data dir)");
  command.add_option("--advertise-url", flags.advertise_url,
                     "how the other servers of a shared store reach this one (default: the "
                     "listen URL)");
  command.add_option("--admin-key", flags.admin_key,
                     "the bootstrap admin key (default: $GPURENT_BOOTSTRAP_ADMIN_KEY, else "
                     "random on the first start)");
  command.add_option("--config", flags.config,
                     "the server's config file (TOML: alert rules, webhooks, /metrics token)");
}

server::ServerOptions server_options(const Context& ctx, const ServerFlags& flags) {
  server::ServerOptions options;
  if (!flags.listen.empty()) options.listen = flags.listen;
  if (!flags.data_dir.empty()) options.data_dir = flags.data_dir;
  options.store = flags.store;
  options.advertise_url = flags.advertise_url;
  options.config_path = flags.config;
  if (!flags.admin_key.empty()) {
    options.admin_key = flags.admin_key;
  } else if (auto from_env = ctx.env()("GPURENT_BOOTSTRAP_ADMIN_KEY")) {
    options.admin_key = std::move(from_env);
  }
  return options;
}

// The block printed once the server listens. Tests and scripts read it through a pipe, hence
// the flush.
void announce(Context& ctx, std::string_view role, const server::ReadyInfo& info,
              const Fields& extra, std::string_view footer) {
  Fields fields = {{"URL", info.url}, {"Web console", info.url + "/"}};
  if (info.admin_key) fields.emplace_back("Admin key", *info.admin_key);
  fields.emplace_back("Data dir", info.data_dir);
  fields.insert(fields.end(), extra.begin(), extra.end());
  ctx.out() << fmt::format("\ngpurent {} is ready.\n\n{}\n{}Press Ctrl-C to stop.\n\n", role,
                           render_fields(fields), footer)
            << std::flush;
}

void add_server(CLI::App& app, Context& ctx) {
  auto flags = std::make_shared<ServerFlags>();
  auto* command = app.add_subcommand("server", "Run the control plane (API, scheduler, billing)");
  command->group("Processes");
  add_server_flags(*command, *flags);
  command->callback([&ctx, flags] {
    ctx.set_process([&ctx, flags] {
      return server::run_server(server_options(ctx, *flags), [&ctx](const auto& info) {
        announce(ctx, "server", info, {},
                 info.admin_key ? "Keep the admin key: it is not shown again.\n\n" : "");
      });
    });
  });
}

void add_dev(CLI::App& app, Context& ctx) {
  struct DevFlags {
    ServerFlags server;
    std::string sim_gpus;
    bool no_cli_config = false;
  };
  auto flags = std::make_shared<DevFlags>();
  auto* command = app.add_subcommand(
      "dev", "Run a whole platform on this machine: server plus one agent, for trying things");
  command->group("Processes");
  add_server_flags(*command, flags->server);
  command->add_option("--sim-gpus", flags->sim_gpus,
                      "simulate these GPUs, e.g. 8xh100-80g (default: the real ones, else 8 "
                      "simulated H100)");
  command->add_flag("--no-cli-config", flags->no_cli_config,
                    "do not point the CLI config file at this server");
  command->callback([&ctx, flags] {
    ctx.set_process([&ctx, flags] {
      server::ServerOptions options = server_options(ctx, flags->server);
      options.bootstrap_credit_micros = kDevBootstrapCreditMicros;
      options.sample_package = true;
      // The local node: an agent in this process, with its files in the server's data directory.
      const server::LocalNode local_node{
          .start = [&options, flags](
                       const std::string& url,
                       const std::string& join_token) -> Result<std::function<void()>> {
            auto agent = std::make_shared<agent::Agent>(
                agent::AgentOptions{.server_url = url,
                                    .join_token = join_token,
                                    .data_dir = options.data_dir + "/agent",
                                    .sim_gpus = flags->sim_gpus});
            GPURENT_CHECK(agent->start());
            return std::function<void()>([agent] { agent->stop(); });
          }};
      const auto on_ready = [&ctx, flags](const server::ReadyInfo& info) {
        Fields extra;
        if (!flags->no_cli_config) {
          auto path = save_connection(ctx.env(), info.url, info.admin_key);
          extra.emplace_back(
              "CLI config",
              path ? path->string() + (info.admin_key ? " (URL and admin key)" : " (URL; key kept)")
                   : "not written: " + path.error().message);
        }
        announce(ctx, "dev", info, extra,
                 "Try:\n  gpurent offers\n"
                 "  gpurent launch --gpu TYPE --wait -- sh -c 'echo $CUDA_VISIBLE_DEVICES'\n"
                 "  gpurent ps\n\n");
      };
      return server::run_server(options, on_ready, &local_node);
    });
  });
}

// An option given in seconds (fractions allowed) for a duration kept in milliseconds; the options
// object outlives the parse (it is the command's).
CLI::Option* add_seconds_option(CLI::App& command, const std::string& name,
                                std::chrono::milliseconds& target, const std::string& help) {
  return command.add_option_function<double>(
      name,
      [&target](double seconds) {
        target = std::chrono::milliseconds(std::llround(seconds * 1000));
      },
      help);
}

void add_agent(CLI::App& app, Context& ctx) {
  auto options = std::make_shared<agent::AgentOptions>();
  auto labels = std::make_shared<std::vector<std::string>>();
  auto* command = app.add_subcommand("agent", "Run the node agent on a GPU host");
  command->group("Processes");
  command
      ->add_option("--server", options->server_url,
                   "the server's URL; several servers of one control plane separated by "
                   "commas (the agent goes to the next when one does not answer)")
      ->required();
  command->add_option("--join-token", options->join_token,
                      "needed on the first start (default: $GPURENT_JOIN_TOKEN)");
  command->add_option("--ca-file", options->tls.ca_file,
                      "https: trust the server's certificate from this PEM file (default: the "
                      "system's store)");
  auto* client_cert = command->add_option(
      "--client-cert", options->tls.cert_file,
      "https: the node's certificate (PEM) when the server asks agents for one (mutual TLS)");
  auto* client_key =
      command->add_option("--client-key", options->tls.key_file, "the key of --client-cert (PEM)");
  client_cert->needs(client_key);
  client_key->needs(client_cert);
  command->add_option("--sim-gpus", options->sim_gpus,
                      "simulate these GPUs, e.g. 4xa100-80g or 8xh100-80g:nvlink=2 (default: the "
                      "real ones)");
  command->add_option("--data-dir", options->data_dir, "where the node's identity is kept")
      ->capture_default_str();
  command->add_option("--name", options->node_name, "the node's name (default: hostname)");
  command->add_option("--fabric-group", options->fabric_group,
                      "the node's fabric group: nodes behind one InfiniBand switch share one");
  command->add_option("--container-socket", options->container_socket,
                      "the Docker Engine API socket (Docker or Podman, e.g. "
                      "/run/podman/podman.sock) for workloads that name an image; without it the "
                      "node runs plain processes only");
  command
      ->add_option("--gpu-access", options->gpu_access,
                   "how containers get their GPUs: nvidia (device requests) or cdi")
      ->transform(CLI::CheckedTransformer(std::map<std::string, agent::GpuAccess>{
          {"nvidia", agent::GpuAccess::kNvidiaDeviceRequest}, {"cdi", agent::GpuAccess::kCdi}}))
      ->option_text("nvidia|cdi");
  command->add_flag("--allow-unsafe-container-toolkit", options->allow_unsafe_container_toolkit,
                    "UNSAFE: give containers GPUs even with an NVIDIA Container Toolkit older than "
                    "1.17.8, missing or of unknown version (its hooks let images escape to the "
                    "host: CVE-2025-23266, CVE-2024-0132)");
  command
      ->add_option("--advertise-address", options->advertise_address,
                   "how other nodes reach this one: MASTER_ADDR of multi-node jobs (default: the "
                   "local address facing the server)")
      ->check([](const std::string& text) {
        return agent::valid_advertise_address(text)
                   ? std::string()
                   : "expected a host name or IP address (letters, digits, '.', '-', ':')";
      });
  auto* vm_kernel = command->add_option(
      "--vm-kernel", options->vm_kernel,
      "run VM work (--runtime vm): the guest kernel every VM boots (docs/vm-runtime.md)");
  command
      ->add_option("--vm-initrd", options->vm_initrd,
                   "the guest initrd; its /init runs the work's command")
      ->needs(vm_kernel);
  command
      ->add_option("--vm-image", options->vm_image,
                   "run VM work from a cloud image instead (qcow2 with cloud-init and qemu-ga): "
                   "each instance gets a copy-on-write root disk on it")
      ->excludes(vm_kernel)
      ->check(CLI::ExistingFile);
  command
      ->add_option("--vm-accelerator", options->vm_accelerator,
                   "with --vm-kernel or --vm-image: auto (KVM when /dev/kvm works, else TCG), "
                   "kvm or tcg (QEMU's emulation: no GPUs)")
      ->transform(CLI::CheckedTransformer(std::map<std::string, agent::VmAcceleratorChoice>{
          {"auto", agent::VmAcceleratorChoice::kAuto},
          {"kvm", agent::VmAcceleratorChoice::kKvm},
          {"tcg", agent::VmAcceleratorChoice::kTcg}}))
      ->option_text("auto|kvm|tcg");
  command
      ->add_option("--vm-network", options->vm_network,
                   "what VMs reach: outbound (through passt: what the node reaches, but not its "
                   "loopback) or isolated (nothing; only their services' ports reach in)")
      ->transform(CLI::CheckedTransformer(std::map<std::string, agent::VmNetwork>{
          {"outbound", agent::VmNetwork::kOutbound}, {"isolated", agent::VmNetwork::kIsolated}}))
      ->option_text("outbound|isolated");
  command
      ->add_option("--vm-shares", options->vm_shares,
                   "how VMs get their folders (/workspace, volumes): 9p (QEMU's; the guest's "
                   "owners and special files kept apart in xattrs) or virtiofs (for guest kernels "
                   "without 9p, such as Debian's cloud kernel; needs root)")
      ->transform(CLI::CheckedTransformer(std::map<std::string, agent::VmShares>{
          {"9p", agent::VmShares::k9p}, {"virtiofs", agent::VmShares::kVirtioFs}}))
      ->option_text("9p|virtiofs");
  add_seconds_option(*command, "--vm-stop-grace", options->vm_stop_grace,
                     "seconds a stopped VM's guest has to shut down before QEMU is killed "
                     "(default 60)")
      ->check(CLI::Range(1.0, 3600.0));
  command->add_option("--instances-dir", options->instances_dir,
                      "where instances' working directories live (default: DATA_DIR-instances, "
                      "beside the data directory, which stays the agent's alone)");
  command->add_flag("!--no-sandbox", options->sandbox,
                    "run process workloads without a sandbox (the agent's user, the host's view); "
                    "the node then runs one tenant's processes at a time");
  command
      ->add_option("--workload-ids", options->workload_ids,
                   "the uids and gids sandboxed workloads get, FIRST-LAST (default "
                   "200000-1199999); each tenant's VMs over virtio-fs get 65536 ids after it")
      ->check([](const std::string& text) {
        auto range = agent::parse_id_range(text);
        return range ? std::string() : range.error().message;
      });
  command->add_option("--listen-port", options->node_api_port,
                      "port of the node API (the server reaches the node's services and exec "
                      "through it) on the advertised address; default: an ephemeral port");
  command
      ->add_option("--label", *labels, "a label KEY=VALUE for placement, e.g. zone=b (repeatable)")
      ->check([](const std::string& text) {
        auto label = agent::parse_label(text);
        return label ? std::string() : label.error().message;
      });
  add_seconds_option(*command, "--telemetry-interval", options->telemetry_interval,
                     "seconds between two samples of the GPUs (default 1; 0: no telemetry)")
      ->check(CLI::Range(0.0, 3600.0));
  command
      ->add_option("--sim-nodes", options->sim_nodes,
                   "run this many simulated nodes (named NAME-sim-0000 ...) in this one process, "
                   "with --sim-gpus each and no processes started")
      ->check(CLI::Range(1, agent::kMaxSimNodes));
  command->callback([&ctx, options, labels] {
    for (const auto& text : *labels) {
      auto [key, value] = *agent::parse_label(text);  // checked by the option's validator
      if (!options->labels.emplace(key, value).second) {
        throw CLI::ValidationError("--label", fmt::format("label '{}' is given twice", key));
      }
    }
    ctx.set_process([&ctx, options] {
      // From the environment so the token need not show up in `ps` listings.
      if (options->join_token.empty()) {
        options->join_token = ctx.env()("GPURENT_JOIN_TOKEN").value_or("");
      }
      return agent::run_agent(*options);
    });
  });
}

}  // namespace

void add_process_commands(CLI::App& app, Context& ctx) {
  add_server(app, ctx);
  add_dev(app, ctx);
  add_agent(app, ctx);
  app.add_subcommand("version", "Print the version")->group("Other")->callback([&ctx] {
    ctx.set_process([&ctx] {
      ctx.out() << fmt::format("gpurent {}\n", kVersion);
      return 0;
    });
  });
}

}  // namespace gpurent::cli
