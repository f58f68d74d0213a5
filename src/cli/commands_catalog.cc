// offers and gpu-types: what can be rented, at which price.
#include <CLI/App.hpp>

#include <algorithm>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/views.h"

namespace gpurent::cli {

void add_catalog_commands(CLI::App& app, Context& ctx) {
  auto sort = std::make_shared<std::string>();
  auto* offers = app.add_subcommand(
      "offers", "GPU types with capacity, their prices and what they measure (TFLOPS per price)");
  offers->group("Catalog");
  offers
      ->add_option("--sort", *sort,
                   "price (cheapest first), perf-per-price or spot-perf-per-price (most "
                   "measured TFLOPS per currency unit an hour first), images-per-price (most "
                   "ResNet-50 images per currency unit first); default: by GPU type")
      ->check(CLI::IsMember(
          {"gpu-type", "price", "perf-per-price", "spot-perf-per-price", "images-per-price"}));
  offers->callback([&ctx, sort] {
    ctx.set_command([&ctx, sort] {
      std::string order = *sort;
      std::ranges::replace(order, '-', '_');
      return ctx.call_and_show(
          [order](client::ApiClient& api) { return api.catalog().offers(order); }, offers_view);
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
