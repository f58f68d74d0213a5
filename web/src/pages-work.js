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
  const [list, balance] = await Promise.all([api("GET", "/v1/reservations"),
                                             api("GET", "/v1/billing/balance")]);
  replace(main,
    h("h1", {}, t("nav.reservations")),
    table([
      ["ID", (r) => r.id],
      [t("offers.type"), (r) => `${r.gpu_count} × ${r.gpu_type}`],
      [t("reservations.window"), (r) => `${dateTime(r.start)} → ${dateTime(r.end)}`],
      [t("instances.state"), (r) => jobState(r.state)],
      [t("billing.amount"), (r) => money(r.total_micros, balance.currency)],
    ], list.items, {empty: t("common.none")}));
}

export async function volumesPage(main) {
  const list = await api("GET", "/v1/volumes");
  replace(main,
    h("h1", {}, t("nav.volumes")),
    table([
      [t("instances.name"), (v) => v.name],
      [t("volumes.size"), (v) => `${v.size_gb} GB`],
      [t("instances.node"), (v) => v.node_id ?? "—"],
      [t("instances.state"), (v) => v.state],
      [t("instances.created"), (v) => dateTime(v.created_at)],
    ], list.items, {empty: t("common.none")}));
}
