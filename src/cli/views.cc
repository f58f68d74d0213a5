#include "cli/views.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/output.h"
#include "cli/view_text.h"

namespace gpurent::cli {
namespace {

std::string gpus(const std::string& type, int count) {
  return type.empty() ? "-" : fmt::format("{}x {}", count, type);
}

std::string command_text(const std::vector<std::string>& argv) { return shell_join(argv); }

// "CNY 18.00/GPU-h" and, for a term discount, ", 10 % off".
std::string reserved_price(const api::Reservation& reservation) {
  std::string text =
      format_price(reservation.price_per_gpu_hour_micros, reservation.currency, "GPU-h");
  if (reservation.discount_permille > 0) {
    text += fmt::format(", {} off", format_permille_percent(reservation.discount_permille));
  }
  return text;
}

std::string gpu_memory(int memory_gb) {
  return memory_gb > 0 ? fmt::format(">= {} GB", memory_gb) : "any";
}

}  // namespace

std::string offers_view(const std::vector<api::Offer>& items) {
  // ResNet-50's columns once a type has a recorded run.
  const bool trained = std::ranges::any_of(
      items, [](const api::Offer& offer) { return offer.measured && offer.measured->resnet50; });
  std::vector<std::string> headers = {"GPU TYPE", "NAME",  "MEMORY", "FREE",   "TOTAL",
                                      "MAX/NODE", "PRICE", "SPOT",   "TFLOPS", "TFLOPS PER UNIT-H"};
  if (trained) {
    headers.emplace_back("RESNET-50 IMG/S");
    headers.emplace_back("IMAGES PER UNIT");
  }
  Table table(headers);
  bool measured = false;
  bool simulated = false;
  for (const auto& offer : items) {
    std::string tflops = "-";
    std::string per_price = "-";
    if (const auto& m = offer.measured) {
      measured = true;
      simulated = simulated || m->simulated;
      if (m->figures.training_tflops) {
        tflops = fmt::format("{:.0f}{}", *m->figures.training_tflops, m->simulated ? "*" : "");
      }
      if (m->perf_per_price) per_price = fmt::format("{:.1f}", *m->perf_per_price);
    }
    std::vector<std::string> row = {
        offer.gpu_type,
        offer.display_name,
        memory(offer.memory_mb),
        std::to_string(offer.free),
        std::to_string(offer.total),
        std::to_string(offer.max_free_per_node),
        price(offer.price_per_gpu_hour_micros, offer.currency),
        offer.spot_price_per_gpu_hour_micros
            ? price(offer.spot_price_per_gpu_hour_micros, offer.currency)
            : "-",
        tflops,
        per_price};
    if (trained) {
      std::string images = "-";
      std::string images_per_price = "-";
      if (offer.measured && offer.measured->resnet50) {
        const api::OfferTraining& training = *offer.measured->resnet50;
        if (const auto amp = training.images_per_s.find("amp");
            amp != training.images_per_s.end()) {
          images = fmt::format("{:.0f}", amp->second);
        }
        if (training.images_per_price) {
          images_per_price = fmt::format("{:.0f}", *training.images_per_price);
        }
      }
      row.push_back(std::move(images));
      row.push_back(std::move(images_per_price));
    }
    table.add_row(std::move(row));
  }
  std::string out = table.render();
  if (!measured) return out;
  out +=
      "TFLOPS: the median dense BF16 (else FP16) GEMM measured on the type's GPUs; per unit-h: "
      "TFLOPS per currency unit an hour of one GPU costs.\n";
  if (trained) {
    out +=
        "ResNet-50: mixed-precision training images a second on one GPU (the median of the runs "
        "recorded), and the images a currency unit buys.\n";
  }
  if (simulated) out += "* simulated GPUs: the catalog's figures, not measured.\n";
  return out;
}

std::string benchmark_request_view(const api::BenchmarkRequest& request) {
  std::vector<std::string> gpus;
  for (const int index : request.gpus) gpus.push_back(std::to_string(index));
  return render_fields({{"Request", std::to_string(request.id)},
                        {"Node", request.node_id},
                        {"GPUs", fmt::format("{}", fmt::join(gpus, ", "))},
                        {"Reason", std::string(model::to_string(request.reason))}}) +
         fmt::format("The GPUs take no work until the node answers: gpurent nodes benchmarks {}\n",
                     sanitize(request.node_id));
}

std::string node_benchmarks_view(const std::vector<api::GpuBenchmarkHistory>& items,
                                 Timestamp now) {
  Table table({"GPU", "TYPE", "WHEN", "REASON", "FP32", "TF32", "FP16", "BF16", "FP8", "MEMORY",
               "H2D", "D2H", "VS TYPE"});
  const auto tflops = [](const api::Figures& figures, const std::string& precision) {
    const auto it = figures.gemm_tflops.find(precision);
    return it == figures.gemm_tflops.end() ? std::string("-") : fmt::format("{:.1f}", it->second);
  };
  const auto gbps = [](double value) { return fmt::format("{:.0f} GB/s", value); };
  for (const auto& gpu : items) {
    // Newest first; the comparison with the type is the newest run's.
    for (auto run = gpu.runs.rbegin(); run != gpu.runs.rend(); ++run) {
      const bool newest = run == gpu.runs.rbegin();
      std::string versus = "-";
      if (newest && gpu.shortfall_percent) {
        versus = *gpu.shortfall_percent > 0 ? fmt::format("-{:.1f}%", *gpu.shortfall_percent)
                                            : "at or above median";
      }
      table.add_row({std::to_string(gpu.index), gpu.type,
                     when(run->at, now) + (run->simulated ? " (sim)" : ""),
                     std::string(model::to_string(run->reason)), tflops(run->figures, "fp32"),
                     tflops(run->figures, "tf32"), tflops(run->figures, "fp16"),
                     tflops(run->figures, "bf16"), tflops(run->figures, "fp8"),
                     gbps(run->figures.memory_gbps), gbps(run->figures.h2d_gbps),
                     gbps(run->figures.d2h_gbps), versus});
    }
  }
  return table.render() +
         "GEMM in TFLOPS. VS TYPE: below the median of the type's GPUs on the "
         "worst figure (judged with 3 or more measured).\n";
}

std::string gpu_types_view(const std::vector<api::GpuType>& items) {
  Table table({"GPU TYPE", "NAME", "MEMORY", "FREE", "TOTAL", "PRICE"});
  for (const auto& type : items) {
    table.add_row({type.slug, type.display_name, memory(type.memory_mb), std::to_string(type.free),
                   std::to_string(type.total),
                   price(type.price_per_gpu_hour_micros, type.currency)});
  }
  return table.render();
}

std::string transfers_view(const std::vector<api::Transfer>& items, Timestamp now) {
  Table table({"ID", "TIME", "KIND", "FROM", "TO", "AMOUNT", "REFERENCE"});
  for (const auto& transfer : items) {
    table.add_row({transfer.id, when(transfer.at, now),
                   std::string(model::to_string(transfer.kind)), transfer.from_account,
                   transfer.to_account, format_money(transfer.amount_micros, transfer.currency),
                   dash(transfer.reference)});
  }
  return table.render();
}

std::string topup_view(const api::TopupResult& topup) {
  return render_fields({{"Transfer", topup.transfer_id},
                        {"Tenant", topup.tenant_id},
                        {"Amount", format_money(topup.amount_micros, topup.currency)},
                        {"Balance", format_money(topup.balance_micros, topup.currency)}});
}

std::string whoami_view(const api::Whoami& whoami) {
  std::string scopes;
  for (const auto& scope : whoami.scopes) scopes += (scopes.empty() ? "" : " ") + scope;
  return render_fields({{"Tenant", whoami.tenant_id},
                        {"Key", whoami.key_id},
                        {"Role", std::string(model::to_string(whoami.role))},
                        {"Scopes", scopes.empty() ? "*" : sanitize(scopes)}});
}

std::string join_token_view(const api::JoinToken& token, std::string_view server_url,
                            Timestamp now) {
  return render_fields({{"ID", token.id},
                        {"Token", token.token},
                        {"Expires", when_exactly(token.expires_at, now)}}) +
         fmt::format(
             "\nStore the token now: it is not shown again. On the new node run:\n"
             "  gpurent agent --server {} --join-token {}\n",
             sanitize(server_url), sanitize(token.token));
}

std::string reservations_view(const std::vector<api::Reservation>& items, Timestamp now) {
  Table table({"ID", "TENANT", "GPUS", "STATE", "START", "END", "TOTAL", "PAID"});
  for (const auto& reservation : items) {
    table.add_row(
        {reservation.id, reservation.tenant_id, gpus(reservation.gpu_type, reservation.gpu_count),
         std::string(model::to_string(reservation.state)), when(reservation.start, now),
         when(reservation.end, now), format_money(reservation.total_micros, reservation.currency),
         format_money(reservation.paid_micros, reservation.currency)});
  }
  return table.render();
}

std::string reservation_quote_text(const api::Reservation& quote) {
  const std::string window =
      fmt::format("{} {} GPU(s) from {} to {}", quote.gpu_count, quote.gpu_type,
                  format_rfc3339(quote.start), format_rfc3339(quote.end));
  const std::string total = format_money(quote.total_micros, quote.currency);
  if (quote.payment == model::ReservationPayment::kMonthly) {
    return fmt::format(
        "Booking {} costs {} ({}), paid every 30 days; the first payment is "
        "taken now. Book it?",
        window, total, reserved_price(quote));
  }
  return fmt::format("Booking {} takes {} from your balance now ({}). Book it?", window, total,
                     reserved_price(quote));
}

std::string reservation_view(const api::Reservation& reservation, Timestamp now) {
  return render_fields(
      {{"ID", reservation.id},
       {"Tenant", reservation.tenant_id},
       {"GPUs", gpus(reservation.gpu_type, reservation.gpu_count)},
       {"State", std::string(model::to_string(reservation.state))},
       {"Start", when_exactly(reservation.start, now)},
       {"End", when_exactly(reservation.end, now)},
       {"Created", when_exactly(reservation.created_at, now)},
       {"Price", reserved_price(reservation)},
       {"Total", format_money(reservation.total_micros, reservation.currency)},
       {"Payment", std::string(model::to_string(reservation.payment))},
       {"Paid", fmt::format("{}{}", format_money(reservation.paid_micros, reservation.currency),
                            reservation.refunded ? " (refunded)" : "")}});
}

std::string templates_view(const std::vector<api::Template>& items) {
  Table table({"NAME", "RUNTIMES", "IMAGE", "SERVICES", "GPU MEMORY", "BUILT IN"});
  for (const auto& t : items) {
    table.add_row({t.name, join(t.runtimes), text_of(t.image), join(t.services),
                   gpu_memory(t.recommended_gpu_memory_gb), yes_no(t.builtin)});
  }
  return table.render();
}

std::string template_view(const api::Template& t) {
  return render_fields({{"Name", t.name},
                        {"Description", t.description},
                        {"Runtimes", join(t.runtimes)},
                        {"Image", text_of(t.image)},
                        {"Command", command_text(t.command)},
                        {"Process", command_text(t.process_command)},
                        {"Env", join_env(t.env)},
                        {"Services", join(t.services)},
                        {"GPU memory", gpu_memory(t.recommended_gpu_memory_gb)},
                        {"Built in", yes_no(t.builtin)}});
}

std::string quota_view(const api::Quota& quota) {
  std::string per_type;
  for (const auto& [type, count] : quota.max_gpus_per_type) {
    per_type += fmt::format("{}{} {}", per_type.empty() ? "" : ", ", count, type);
  }
  const auto limit = [](const std::optional<int>& count) {
    return count ? std::to_string(*count) : std::string("no limit");
  };
  return render_fields({{"Tenant", quota.tenant_id},
                        {"Max GPUs", per_type.empty() ? "no limit" : per_type},
                        {"Max instances", limit(quota.max_instances)},
                        {"Max queued", limit(quota.max_queued)},
                        {"Max array", limit(quota.max_array)},
                        {"Max body bytes", limit(quota.max_body_bytes)},
                        {"Weight", std::to_string(quota.weight)}});
}

std::string audit_view(const std::vector<api::AuditEntry>& items, Timestamp now) {
  Table table({"WHEN", "KEY", "ROLE", "FROM", "ACTION", "TARGET", "STATUS", "OUTCOME"});
  for (const auto& entry : items) {
    table.add_row({when(entry.at, now), dash(text_of(entry.key_id)),
                   entry.role ? std::string(model::to_string(*entry.role)) : "-", entry.address,
                   entry.action, entry.target, std::to_string(entry.status), entry.outcome});
  }
  return table.render();
}

std::string events_view(const std::vector<api::Event>& items, Timestamp now) {
  Table table({"WHEN", "KIND", "OBJECT", "MESSAGE"});
  for (const auto& event : items) {
    table.add_row({when(event.at, now), event.kind, event.object_id, event.message});
  }
  return table.render();
}

}  // namespace gpurent::cli
