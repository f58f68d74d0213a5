// offers and gpu-types: what can be rented, at which price.
#include <CLI/App.hpp>

#include "cli/commands.h"
#include "cli/views.h"

namespace gpurent::cli {

void add_catalog_commands(CLI::App& app, Context& ctx) {
  app.add_subcommand("offers", "GPU types with capacity, and their prices")
      ->group("Catalog")
      ->callback([&ctx] {
        ctx.set_command([&ctx] {
          return ctx.call_and_show([](client::ApiClient& api) { return api.catalog().offers(); },
                                   offers_view);
        });
      });
  app.add_subcommand("gpu-types", "Every GPU type the platform knows")
      ->group("Catalog")
      ->callback([&ctx] {
        ctx.set_command([&ctx] {
          return ctx.call_and_show([](client::ApiClient& api) { return api.catalog().gpu_types(); },
                                   gpu_types_view);
        });
      });
}

}  // namespace gpurent::cli
