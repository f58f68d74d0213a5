// Operators' pages: the nodes, each GPU as a cell of a heatmap (state, utilisation, temperature),
// and cordon, uncordon and drain.
import {all, api} from "./api.js";
import {showError} from "./app.js";
import {h, replace, table} from "./dom.js";
import {dateTime, money, percent} from "./format.js";
import {t} from "./i18n.js";

// A GPU's cell: its utilisation as the fill, its temperature and holder in the tooltip.
function gpuCell(gpu) {
  const telemetry = gpu.telemetry || {};
  const util = telemetry.gpu_util_pct;
  const level = gpu.quarantined ? "quarantined" : util === undefined || util === null ? "unknown"
    : util >= 80 ? "high" : util >= 30 ? "mid" : "low";
  const tip = [`GPU ${gpu.index} ${gpu.name || gpu.type}`, `util ${percent(util)}`,
               telemetry.temperature_c !== undefined ? `${telemetry.temperature_c} °C` : null,
               telemetry.power_w !== undefined ? `${Math.round(telemetry.power_w)} W` : null,
               gpu.instance_id ? `→ ${gpu.instance_id}` : null,
               gpu.quarantined ? "quarantined" : null].filter(Boolean).join("\n");
  return h("span", {class: `gpu gpu-${level}${gpu.instance_id ? " held" : ""}`, title: tip,
                    dataset: {uuid: gpu.uuid}});
}

export async function nodesPage(main) {
  const nodes = await all("/v1/nodes");
  const act = (node, action, question) => h("button", {
    class: action === "drain" ? "danger" : "", dataset: {action, node: node.id},
    onclick: async () => {
      if (question && !confirm(t(question, {name: node.name}))) return;
      try {
        const answer = await api("POST", `/v1/nodes/${encodeURIComponent(node.id)}/${action}`);
        await nodesPage(main);
        if (answer.moving_instances > 0) {
          main.prepend(h("p", {class: "notice", role: "status"},
                         t("nodes.moving", {count: answer.moving_instances})));
        }
      } catch (error) {
        showError(main, error);
      }
    }}, t(`nodes.${action}`));
  replace(main,
    h("h1", {}, t("nav.nodes")),
    table([
      [t("nodes.id"), (n) => h("span", {title: n.id}, n.name)],
      [t("nodes.status"), (n) => h("span", {class: `status status-${n.status}`}, n.status)],
      [t("nodes.gpus"), (n) => [h("span", {class: "heat"}, n.gpus.map(gpuCell)),
        n.gpus.filter((g) => g.quarantined).map((g) => h("button", {
          class: "small", dataset: {release: g.index, node: n.id},
          onclick: async () => {
            try {
              await api("POST", `/v1/nodes/${encodeURIComponent(n.id)}/gpus/${g.index}/release`);
              await nodesPage(main);
            } catch (error) {
              showError(main, error);
            }
          }}, t("nodes.release", {index: g.index})))]],
      ["", (n) => [n.status === "cordoned" || n.status === "draining"
        ? act(n, "uncordon") : act(n, "cordon"), act(n, "drain", "nodes.confirm_drain")]],
    ], nodes, {rowAttributes: (n) => ({dataset: {node: n.id}})}));
}

// --- Alerts ----------------------------------------------------------------------------------

export async function alertsPage(main) {
  const [alerts, rules] = await Promise.all([api("GET", "/v1/alerts?history=50"),
                                             api("GET", "/v1/alerts/rules")]);
  replace(main,
    h("h1", {}, t("nav.alerts")),
    table([
      [t("alerts.severity"), (a) => a.severity],
      [t("alerts.rule"), (a) => a.rule],
      [t("alerts.subject"), (a) => a.subject.subject],
      [t("alerts.state"), (a) => a.state],
      ["", (a) => a.acknowledged ? "✓" : h("button", {onclick: async () => {
        await api("POST", `/v1/alerts/${encodeURIComponent(a.id)}/ack`);
        await alertsPage(main);
      }}, t("alerts.ack"))],
    ], alerts.items, {empty: t("dashboard.no_alerts")}),
    h("h2", {}, t("alerts.history")),
    table([
      [t("billing.at"), (x) => dateTime(x.at)],
      [t("alerts.rule"), (x) => x.rule],
      [t("alerts.subject"), (x) => x.subject.subject],
      [t("alerts.state"), (x) => `${x.from} → ${x.to}`],
    ], alerts.history, {empty: t("common.none")}),
    h("h2", {}, t("alerts.rules")),
    ruleForm(main),
    table([
      [t("instances.name"), (r) => r.name],
      [t("alerts.condition"), (r) => `${r.metric} ${r.comparison} ${r.threshold} (${r.for_s} s)`],
      [t("alerts.severity"), (r) => r.severity],
      [t("alerts.scope"), (r) => r.scope_value ? `${r.scope} ${r.scope_value}` : r.scope],
      ["", (r) => h("button", {class: "small", dataset: {deleteRule: r.name}, onclick: async () => {
        try {
          await api("DELETE", `/v1/alerts/rules/${encodeURIComponent(r.name)}`);
          await alertsPage(main);
        } catch (error) {
          showError(main, error);
        }
      }}, t("instance.delete"))],
    ], listOf(rules), {rowAttributes: (r) => ({dataset: {rule: r.name}})}));
}

// A rule of the operators' own (POST /v1/alerts/rules); the API says what it refuses.
function ruleForm(main) {
  const notice = h("span", {class: "error", id: "rule-error"});
  const select = (name, options) => h("select", {name, "aria-label": name},
    options.map((o) => h("option", {value: o}, o)));
  return h("form", {class: "inline", id: "rule-form", onsubmit: async (event) => {
    event.preventDefault();
    const e = event.target.elements;
    const rule = {name: e.name.value, metric: e.metric.value, comparison: e.comparison.value,
                  threshold: Number(e.threshold.value), for_s: Number(e.for_s.value),
                  severity: e.severity.value};
    try {
      await api("POST", "/v1/alerts/rules", rule);
      await alertsPage(main);
    } catch (error) {
      replace(notice, error.message);
    }
  }},
  h("input", {name: "name", required: true, placeholder: t("instances.name"), class: "short-wide"}),
  select("metric", ["gpu_temp", "gpu_util", "power_usage", "fb_used", "node_heartbeat_age_s",
                    "node_clock_skew_ms", "instance_gpu_util"]),
  select("comparison", [">", ">=", "<", "<=", "==", "!=", "absent"]),
  h("input", {name: "threshold", type: "number", step: "any", value: 85, class: "short",
              "aria-label": "threshold"}),
  h("input", {name: "for_s", type: "number", min: 0, value: 60, class: "short", "aria-label": "for_s"}),
  select("severity", ["warning", "critical", "info"]),
  h("button", {type: "submit"}, t("alerts.add_rule")),
  notice);
}

function listOf(body) {
  return Array.isArray(body) ? body : body.items;
}

// --- Tenants: balances, top-ups, quotas ---------------------------------------------------------

export async function tenantsPage(main) {
  const tenants = await api("GET", "/v1/tenants");
  const notice = h("p", {role: "status", id: "tenants-notice"});
  const topup = (tenant) => h("form", {class: "inline", onsubmit: async (event) => {
    event.preventDefault();
    const amount = Math.round(Number(event.target.elements.amount.value) * 1_000_000);
    try {
      await api("POST", "/v1/billing/topups", {tenant_id: tenant.id, amount_micros: amount,
                                              reference: "console"});
      await tenantsPage(main);
    } catch (error) {
      replace(notice, h("span", {class: "error"}, error.message));
    }
  }}, h("input", {name: "amount", type: "number", min: "0.01", step: "0.01", class: "short",
                  "aria-label": t("tenants.topup")}),
  h("button", {type: "submit"}, t("tenants.topup")));
  const quota = (tenant) => h("form", {class: "inline", onsubmit: async (event) => {
    event.preventDefault();
    const e = event.target.elements;
    const body = {weight: Number(e.weight.value) || 1};
    if (e.max_instances.value) body.max_instances = Number(e.max_instances.value);
    try {
      await api("PUT", `/v1/tenants/${encodeURIComponent(tenant.id)}/quota`, body);
      replace(notice, t("tenants.quota_set", {name: tenant.name}));
    } catch (error) {
      replace(notice, h("span", {class: "error"}, error.message));
    }
  }}, h("input", {name: "max_instances", type: "number", min: 0, class: "short-wide",
                  placeholder: t("tenants.max_instances"), "aria-label": t("tenants.max_instances")}),
  h("input", {name: "weight", type: "number", min: 1, max: 1000, value: 1, class: "short",
              "aria-label": t("tenants.weight")}),
  h("button", {type: "submit"}, t("tenants.set_quota")));
  replace(main,
    h("h1", {}, t("nav.tenants")),
    h("form", {class: "inline", onsubmit: async (event) => {
      event.preventDefault();
      try {
        await api("POST", "/v1/tenants", {name: event.target.elements.name.value});
        await tenantsPage(main);
      } catch (error) {
        replace(notice, h("span", {class: "error"}, error.message));
      }
    }}, h("input", {name: "name", placeholder: t("instances.name"), required: true, maxlength: 64}),
    h("button", {type: "submit"}, t("tenants.create"))),
    notice,
    table([
      [t("instances.name"), (x) => h("span", {title: x.id}, x.name)],
      [t("dashboard.balance"), (x) => money(x.balance_micros, x.currency)],
      [t("tenants.topup"), topup],
      [t("tenants.quota"), quota],
    ], listOf(tenants), {rowAttributes: (x) => ({dataset: {tenant: x.name}})}));
}

// --- Prices, spot prices and revenue ----------------------------------------------------------

export async function pricesPage(main) {
  const [prices, spot, revenue] = await Promise.all([
    api("GET", "/v1/prices"), api("GET", "/v1/spot-prices"), api("GET", "/v1/billing/revenue")]);
  const current = prices.current;
  replace(main,
    h("h1", {}, t("nav.prices")),
    h("p", {}, t("prices.version", {version: current.version, since: dateTime(current.effective_at)})),
    table([
      [t("offers.type"), ([type]) => type],
      [t("offers.on_demand"), ([, micros]) => money(micros, current.currency)],
      [t("offers.spot"), ([type]) => money(listOf(spot).find((s) => s.gpu_type === type)
        ?.current_per_gpu_hour_micros, current.currency)],
      [t("prices.revenue"), ([type]) => money(revenue.by_gpu_type[type] ?? 0, revenue.currency)],
    ], Object.entries(current.gpu_per_hour_micros)),
    h("h2", {}, t("prices.set")),
    priceForm(main, Object.keys(current.gpu_per_hour_micros)),
    h("h2", {}, t("prices.upcoming")),
    table([
      [t("prices.from"), (v) => dateTime(v.effective_at)],
      ["", (v) => Object.entries(v.gpu_per_hour_micros)
        .map(([type, micros]) => `${type} ${money(micros, v.currency)}`).join(", ")],
    ], prices.upcoming, {empty: t("common.none")}),
    h("h2", {}, t("prices.revenue")),
    h("p", {id: "revenue-total"}, money(revenue.total_micros, revenue.currency)));
}

// A new price of one GPU type from a time on (PUT /v1/prices: what is not given carries over).
function priceForm(main, types) {
  const notice = h("span", {id: "price-notice"});
  return h("form", {class: "inline", id: "price-form", onsubmit: async (event) => {
    event.preventDefault();
    const e = event.target.elements;
    const change = {gpu_per_hour_micros: {[e.gpu_type.value]: Math.round(Number(e.price.value) * 1_000_000)}};
    if (e.effective_at.value) change.effective_at = new Date(e.effective_at.value).toISOString();
    try {
      await api("PUT", "/v1/prices", change);
      await pricesPage(main);
    } catch (error) {
      replace(notice, h("span", {class: "error"}, error.message));
    }
  }},
  h("select", {name: "gpu_type", "aria-label": t("offers.type")}, types.map((type) => h("option", {value: type}, type))),
  h("input", {name: "price", type: "number", min: 0, step: "0.01", required: true, class: "short",
              "aria-label": t("offers.on_demand")}),
  h("input", {name: "effective_at", type: "datetime-local", "aria-label": t("prices.from")}),
  h("button", {type: "submit"}, t("prices.apply")),
  notice);
}
