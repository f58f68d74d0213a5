// Batch jobs (arrays and gangs: their tasks, and each member's log), reservations and volumes.
import {api} from "./api.js";
import {showError} from "./app.js";
import {h, replace, table} from "./dom.js";
import {dateTime, money} from "./format.js";
import {t} from "./i18n.js";

const kPageSize = 50;

function jobState(state) {
  return h("span", {class: `state state-${state}`}, state);
}

function counts(taskCounts) {
  return Object.entries(taskCounts).filter(([, n]) => n > 0).map(([state, n]) => `${state} ${n}`)
    .join(" · ");
}

export async function jobsPage(main) {
  const show = async (cursor) => {
    const page = await api("GET", `/v1/jobs?limit=${kPageSize}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
    replace(main,
      h("h1", {}, t("nav.jobs")),
      table([
        [t("instances.name"), (j) => h("a", {href: `#/jobs/${encodeURIComponent(j.id)}`}, j.name || j.id)],
        [t("instances.state"), (j) => jobState(j.state)],
        [t("jobs.shape"), (j) => `${j.array} × ${j.nodes} × ${j.gpu_count} ${j.gpu_type}`],
        [t("jobs.tasks"), (j) => counts(j.task_counts)],
        [t("instances.created"), (j) => dateTime(j.created_at)],
      ], page.items, {empty: t("jobs.none"), rowAttributes: (j) => ({dataset: {id: j.id}})}),
      h("div", {class: "pager"},
        page.next_cursor ? h("button", {onclick: () => show(page.next_cursor)}, t("common.next")) : null));
  };
  await show("");
}

export async function jobPage(main, id) {
  const path = `/v1/jobs/${encodeURIComponent(id)}`;
  const job = await api("GET", `${path}?tasks=1`);
  const log = h("pre", {class: "logs", id: "task-log"});
  const showLog = async (task, rank) => {
    log.textContent = t("common.loading");
    try {
      log.textContent = await api("GET", `${path}/logs?task=${task}&rank=${rank}`);
    } catch (error) {
      log.textContent = error.message;
    }
  };
  const finished = ["succeeded", "failed", "cancelled"].includes(job.state);
  replace(main,
    h("h1", {}, job.name || job.id, " ", jobState(job.state)),
    h("div", {class: "toolbar"},
      finished ? null : h("button", {class: "danger", dataset: {action: "cancel"}, onclick: async () => {
        if (!confirm(t("jobs.confirm_cancel", {name: job.name || job.id}))) return;
        try {
          await api("POST", `${path}/cancel`);
          await jobPage(main, id);
        } catch (error) {
          showError(main, error);
        }
      }}, t("common.cancel"))),
    h("p", {}, counts(job.task_counts)),
    table([
      [t("jobs.task"), (task) => String(task.index)],
      [t("instances.state"), (task) => jobState(task.state)],
      [t("jobs.attempts"), (task) => String(task.attempts)],
      [t("jobs.exit"), (task) => task.exit_code ?? "—"],
      [t("instance.logs"), (task) => task.instances.map((_, rank) =>
        h("button", {class: "small", dataset: {task: task.index, rank},
                     onclick: () => showLog(task.index, rank)}, `rank ${rank}`))],
    ], job.tasks || []),
    h("h2", {}, t("instance.logs")),
    log);
}

export async function reservationsPage(main) {
  const [list, balance, offers] = await Promise.all([api("GET", "/v1/reservations"),
                                                     api("GET", "/v1/billing/balance"),
                                                     api("GET", "/v1/offers")]);
  const quote = h("p", {id: "reservation-quote", role: "status"});
  const form = h("form", {class: "card", id: "reservation-form"},
    h("div", {class: "row"},
      h("label", {}, t("launch.gpu_type"), h("select", {name: "gpu_type"},
        offers.items.map((o) => h("option", {value: o.gpu_type}, o.display_name)))),
      h("label", {}, t("launch.gpu_count"), h("input", {name: "gpu_count", type: "number", min: 1, value: 1})),
      h("label", {}, t("reservations.start"), h("input", {name: "start", type: "datetime-local", required: true})),
      h("label", {}, t("reservations.hours"), h("input", {name: "hours", type: "number", min: 1, value: 24}))),
    h("div", {class: "toolbar"},
      h("button", {type: "button", id: "quote", onclick: () => book(false)}, t("reservations.quote")),
      h("button", {type: "submit", class: "primary"}, t("reservations.book"))),
    quote);
  const body = () => {
    const e = form.elements;
    const start = new Date(e.start.value);
    const end = new Date(start.getTime() + Number(e.hours.value) * 3_600_000);
    return {gpu_type: e.gpu_type.value, gpu_count: Number(e.gpu_count.value),
            start: start.toISOString(), end: end.toISOString()};
  };
  let key = crypto.randomUUID();  // one booking, however often the button is pressed
  const book = async (really) => {
    try {
      const r = really
        ? await api("POST", "/v1/reservations", body(), {idempotencyKey: key})
        : await api("POST", "/v1/reservations/quote", body());
      replace(quote, t(really ? "reservations.booked" : "reservations.quoted",
                       {id: r.id || "", amount: money(r.total_micros, balance.currency)}));
      if (really) {
        key = crypto.randomUUID();
        await reservationsPage(main);
      }
    } catch (error) {
      replace(quote, h("span", {class: "error"}, error.message));
    }
  };
  form.addEventListener("submit", (event) => { event.preventDefault(); book(true); });
  replace(main,
    h("h1", {}, t("nav.reservations")),
    form,
    table([
      ["ID", (r) => r.id],
      [t("offers.type"), (r) => `${r.gpu_count} × ${r.gpu_type}`],
      [t("reservations.window"), (r) => `${dateTime(r.start)} → ${dateTime(r.end)}`],
      [t("instances.state"), (r) => jobState(r.state)],
      [t("billing.amount"), (r) => money(r.total_micros, balance.currency)],
      ["", (r) => ["booked", "active"].includes(r.state)
        ? h("button", {class: "danger", onclick: async () => {
          if (!confirm(t("reservations.confirm_cancel", {id: r.id}))) return;
          await api("DELETE", `/v1/reservations/${encodeURIComponent(r.id)}`);
          await reservationsPage(main);
        }}, t("common.cancel")) : null],
    ], list.items, {empty: t("common.none")}));
}

export async function volumesPage(main) {
  const list = await api("GET", "/v1/volumes");
  const notice = h("p", {role: "status", id: "volumes-notice"});
  replace(main,
    h("h1", {}, t("nav.volumes")),
    h("form", {class: "inline", id: "volume-form", onsubmit: async (event) => {
      event.preventDefault();
      const e = event.target.elements;
      try {
        await api("POST", "/v1/volumes", {name: e.name.value, size_gb: Number(e.size_gb.value)});
        await volumesPage(main);
      } catch (error) {
        replace(notice, h("span", {class: "error"}, error.message));
      }
    }}, h("input", {name: "name", required: true, maxlength: 63, placeholder: t("instances.name")}),
    h("input", {name: "size_gb", type: "number", min: 1, max: 65536, value: 100, class: "short",
                "aria-label": t("volumes.size")}), " GB",
    h("button", {type: "submit"}, t("volumes.create"))),
    notice,
    table([
      [t("instances.name"), (v) => v.name],
      [t("volumes.size"), (v) => `${v.size_gb} GB`],
      [t("instances.node"), (v) => v.node_id ?? "—"],
      [t("instances.state"), (v) => v.state],
      [t("instances.created"), (v) => dateTime(v.created_at)],
      ["", (v) => h("button", {class: "danger", onclick: async () => {
        if (!confirm(t("volumes.confirm_delete", {name: v.name}))) return;
        try {
          await api("DELETE", `/v1/volumes/${encodeURIComponent(v.id)}`);
          await volumesPage(main);
        } catch (error) {
          replace(notice, h("span", {class: "error"}, error.message));
        }
      }}, t("instance.delete"))],
    ], list.items, {empty: t("common.none"), rowAttributes: (v) => ({dataset: {volume: v.name}})}));
}
