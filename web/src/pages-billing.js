// The tenant's money: balance, usage by GPU type and billing mode, the ledger, invoices (with
// their CSV), top-ups and compute packages.
import {api} from "./api.js";
import {h, replace, table} from "./dom.js";
import {dateTime, duration, money} from "./format.js";
import {t} from "./i18n.js";

const kModes = ["on_demand", "spot", "reserved"];

// Usage per GPU type, one bar per type split by billing mode (widths set through the CSSOM, which
// the Content-Security-Policy allows; style attributes it would not).
function usageChart(items, currency) {
  const byType = new Map();
  for (const item of items) {
    if (item.kind !== "run") continue;
    const row = byType.get(item.gpu_type) || {on_demand: 0, spot: 0, reserved: 0};
    row[item.pricing] += item.amount_micros;
    byType.set(item.gpu_type, row);
  }
  if (byType.size === 0) return h("p", {class: "empty"}, t("billing.no_usage"));
  const largest = Math.max(...[...byType.values()].map((r) => kModes.reduce((s, m) => s + r[m], 0)));
  const bar = (type, row) => {
    const total = kModes.reduce((s, m) => s + row[m], 0);
    const segments = kModes.filter((m) => row[m] > 0).map((m) => {
      const segment = h("span", {class: `segment mode-${m}`,
                                 title: `${t(`launch.${m}`)}: ${money(row[m], currency)}`});
      segment.style.width = `${(100 * row[m]) / Math.max(1, largest)}%`;
      return segment;
    });
    return h("div", {class: "bar-row", dataset: {gpuType: type}},
      h("span", {class: "bar-label"}, type),
      h("span", {class: "bar"}, segments),
      h("span", {class: "bar-value"}, money(total, currency)));
  };
  return h("div", {class: "usage-chart", id: "usage-chart"},
    [...byType.entries()].map(([type, row]) => bar(type, row)),
    h("div", {class: "legend"}, kModes.map((m) =>
      h("span", {}, h("span", {class: `swatch mode-${m}`}), t(`launch.${m}`)))));
}

export async function billingPage(main) {
  const [balance, usage, transfers, invoices, packages, products] = await Promise.all([
    api("GET", "/v1/billing/balance"),
    api("GET", "/v1/billing/usage"),
    api("GET", "/v1/billing/transfers"),
    api("GET", "/v1/billing/invoices"),
    api("GET", "/v1/packages"),
    api("GET", "/v1/packages/products"),
  ]);
  const notice = h("p", {role: "status", id: "billing-notice"});
  const buy = async (product) => {
    if (!confirm(t("billing.confirm_buy", {name: product.name,
                                           amount: money(product.price_micros, currency)}))) return;
    try {
      await api("POST", "/v1/packages", {product: product.name},
                {idempotencyKey: crypto.randomUUID()});
      await billingPage(main);
    } catch (error) {
      replace(notice, h("span", {class: "error"}, error.message));
    }
  };
  const currency = balance.currency;
  const recent = [...transfers.items].reverse().slice(0, 100);
  const topups = transfers.items.filter((x) => x.kind === "topup").reverse();
  replace(main,
    h("div", {class: "tiles"},
      h("div", {class: "tile", id: "tile-balance"}, h("span", {class: "label"}, t("dashboard.balance")),
        h("span", {class: "value"}, money(balance.balance_micros, currency))),
      h("div", {class: "tile"}, h("span", {class: "label"}, t("billing.usage_total")),
        h("span", {class: "value"}, money(usage.total_micros, currency)))),
    h("h2", {}, t("billing.usage")),
    usageChart(usage.items, currency),
    h("h2", {}, t("billing.invoices")),
    table([
      [t("billing.month"), (m) => m.id],
      [t("billing.charges"), (m) => money(m.charges_micros, m.currency)],
      [t("billing.credits"), (m) => money(m.credits_micros, m.currency)],
      [t("billing.payments"), (m) => money(m.payments_micros, m.currency)],
      [t("billing.closing"), (m) => money(m.closing_balance_micros, m.currency)],
      ["", (m) => h("a", {class: "button", href: `/v1/billing/invoices/${m.id}?format=csv`,
                          download: `gpurent-invoice-${m.id}.csv`, dataset: {invoice: m.id}}, "CSV")],
    ], invoices.items, {empty: t("common.none")}),
    h("h2", {}, t("billing.products")),
    notice,
    table([
      [t("billing.package"), (p) => p.name],
      [t("offers.type"), (p) => p.gpu_type],
      [t("billing.remaining"), (p) => `${p.gpu_hours} GPU·h`],
      [t("billing.expires"), (p) => `${p.validity_days} d`],
      [t("billing.amount"), (p) => money(p.price_micros, currency)],
      ["", (p) => h("button", {dataset: {buy: p.name}, onclick: () => buy(p)}, t("billing.buy"))],
    ], listOf(products), {empty: t("common.none")}),
    h("h2", {}, t("billing.packages")),
    table([
      [t("billing.package"), (p) => p.product],
      [t("offers.type"), (p) => p.gpu_type],
      [t("billing.remaining"), (p) => duration(p.remaining_gpu_seconds)],
      [t("billing.expires"), (p) => dateTime(p.expires_at)],
    ], listOf(packages), {empty: t("common.none"), rowAttributes: (p) => ({dataset: {package: p.product}})}),
    h("h2", {}, t("billing.topups")),
    table([
      [t("billing.at"), (x) => dateTime(x.at)],
      [t("billing.amount"), (x) => money(x.amount_micros, currency)],
      [t("billing.reference"), (x) => x.reference],
    ], topups, {empty: t("common.none")}),
    h("h2", {}, t("billing.ledger")),
    table([
      [t("billing.at"), (x) => dateTime(x.at)],
      [t("billing.kind"), (x) => x.kind],
      [t("billing.amount"), (x) => money(x.amount_micros, currency)],
      [t("billing.reference"), (x) => x.reference],
    ], recent, {empty: t("common.none")}));
}

function listOf(body) {
  return Array.isArray(body) ? body : body.items;
}
