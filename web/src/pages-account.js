// Signing in, the dashboard, and the tenant's API keys.
import {api} from "./api.js";
import {principal, signedIn} from "./app.js";
import {h, replace, table} from "./dom.js";
import {dateTime, money} from "./format.js";
import {t} from "./i18n.js";

export function signInPage(main) {
  const error = h("p", {class: "error", role: "alert", hidden: true});
  const key = h("input", {id: "api-key", type: "password", autocomplete: "off", required: true,
                          placeholder: "gpr_…", "aria-label": t("signin.key")});
  const form = h("form", {class: "card narrow", onsubmit: async (event) => {
    event.preventDefault();
    error.hidden = true;
    try {
      signedIn(await api("POST", "/v1/session", {key: key.value.trim()}));
    } catch (failure) {
      replace(error, t("signin.failed", {detail: failure.message}));
      error.hidden = false;
    }
  }},
  h("h1", {}, t("signin.title")),
  h("label", {}, t("signin.key"), key),
  h("p", {class: "hint"}, t("signin.hint")),
  error,
  h("button", {type: "submit", class: "primary"}, t("signin.submit")));
  replace(main, form);
  key.focus();
}

function thisMonth(invoices) {
  const month = new Date().toISOString().slice(0, 7);
  return invoices.items.find((invoice) => invoice.id === month);
}

export async function dashboardPage(main) {
  replace(main, h("p", {}, t("common.loading")));
  const [balance, running, invoices, alerts] = await Promise.all([
    api("GET", "/v1/billing/balance"),
    api("GET", "/v1/instances?state=running&limit=500"),
    api("GET", "/v1/billing/invoices"),
    api("GET", "/v1/alerts?history=0"),
  ]);
  const month = thisMonth(invoices);
  const now = Date.now();
  const costSoFar = (instance) => {
    if (!instance.started_at || instance.price_per_gpu_hour_micros === null) return null;
    const hours = (now - Date.parse(instance.started_at)) / 3_600_000;
    const gpus = instance.gpu_count * instance.gpu_milli / 1000;
    return Math.round(instance.price_per_gpu_hour_micros * gpus * hours);
  };
  replace(main,
    h("div", {class: "tiles"},
      tile(t("dashboard.balance"), money(balance.balance_micros, balance.currency), "balance"),
      tile(t("dashboard.running"), String(running.items.length), "running"),
      tile(t("dashboard.month"),
           month ? money(month.charges_micros, month.currency) : money(0, balance.currency),
           "month"),
      tile(t("dashboard.alerts"), String(alerts.items.length), "alerts")),
    h("h2", {}, t("dashboard.running")),
    table([
      [t("instances.name"), (i) => h("a", {href: `#/instances/${encodeURIComponent(i.id)}`}, i.name)],
      [t("instances.gpus"), (i) => `${i.gpu_count} × ${i.gpu_type}`],
      [t("instances.price"), (i) => money(i.price_per_gpu_hour_micros, i.currency)],
      [t("dashboard.cost_so_far"), (i) => money(costSoFar(i), i.currency)],
    ], running.items, {empty: t("dashboard.no_running")}),
    h("h2", {}, t("dashboard.alerts")),
    table([
      [t("alerts.severity"), (a) => a.severity],
      [t("alerts.rule"), (a) => a.rule],
      [t("alerts.subject"), (a) => a.subject.subject],
      [t("alerts.state"), (a) => a.state],
    ], alerts.items, {empty: t("dashboard.no_alerts")}));
}

function tile(label, value, id) {
  return h("div", {class: "tile", id: `tile-${id}`}, h("span", {class: "label"}, label),
           h("span", {class: "value"}, value));
}

export async function keysPage(main) {
  const me = principal();
  const render = async (created) => {
    const keys = await api("GET", "/v1/api-keys");
    replace(main,
      h("h1", {}, t("keys.title")),
      created ? h("p", {class: "notice", id: "new-key"}, t("keys.created_once", {key: created})) : null,
      h("form", {class: "inline", onsubmit: async (event) => {
        event.preventDefault();
        const made = await api("POST", "/v1/api-keys", {name: event.target.elements.name.value});
        await render(made.key);
      }},
      h("input", {name: "name", placeholder: t("keys.name"), maxlength: 128}),
      h("button", {type: "submit"}, t("keys.create"))),
      table([
        [t("keys.name"), (k) => k.name],
        [t("keys.prefix"), (k) => h("code", {}, `${k.prefix}…`)],
        [t("keys.role"), (k) => k.role],
        [t("keys.created"), (k) => dateTime(k.created_at)],
        ["", (k) => h("button", {class: "danger", onclick: async () => {
          if (!confirm(t("keys.confirm_revoke", {name: k.name || k.prefix}))) return;
          await api("DELETE", `/v1/api-keys/${encodeURIComponent(k.id)}`);
          if (k.id === me.session_of) location.reload();
          else await render();
        }}, t("keys.revoke"))],
      ], keys.items));
  };
  await render();
}
