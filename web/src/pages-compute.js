// What a tenant rents: the GPUs on offer, the launch wizard, its instances and one instance.
import {api, ApiError, csrfToken} from "./api.js";
import {onLeave, showError} from "./app.js";
import {drawGpuCharts, kRanges} from "./charts.js";
import {h, replace, table} from "./dom.js";
import {dateTime, duration, megabytes, money} from "./format.js";
import {t} from "./i18n.js";

const kPageSize = 50;

function stateBadge(state) {
  return h("span", {class: `state state-${state}`}, t(`state.${state}`));
}

function listOf(body) {
  return Array.isArray(body) ? body : body.items;
}

// --- Offers --------------------------------------------------------------------------------

export async function offersPage(main) {
  const [offers, spot] = await Promise.all([
    api("GET", "/v1/offers"),
    api("GET", "/v1/spot-prices").catch(() => ({items: []})),
  ]);
  const spotOf = new Map(listOf(spot).map((s) => [s.gpu_type, s.current_per_gpu_hour_micros]));
  const rows = listOf(offers).map((o) => ({...o, spot: spotOf.get(o.gpu_type) ?? null}));
  const filter = {text: "", minFree: 0, sort: "price"};
  const results = h("div", {id: "offers"});
  // Highest first; offers without the figure last.
  const highest = (figure) => (a, b) => (figure(b) ?? -Infinity) - (figure(a) ?? -Infinity);
  const sorters = {
    price: (a, b) => (a.price_per_gpu_hour_micros ?? Infinity) - (b.price_per_gpu_hour_micros ?? Infinity),
    perf_per_price: highest((o) => o.measured?.perf_per_price),
    images_per_price: highest((o) => o.measured?.resnet50?.images_per_price),
    memory: (a, b) => b.memory_mb - a.memory_mb,
    free: (a, b) => b.free - a.free,
  };
  // Measured figures; simulated GPUs' (the catalog's) are marked so.
  const simulated = (o) => (o.measured?.simulated ? h("abbr", {title: t("offers.simulated")}, " *") : null);
  const figure = (value, digits) => (value === null || value === undefined ? "—" : value.toFixed(digits));
  const draw = () => {
    const shown = rows
      .filter((o) => `${o.gpu_type} ${o.display_name}`.toLowerCase().includes(filter.text))
      .filter((o) => o.free >= filter.minFree)
      .sort(sorters[filter.sort]);
    replace(results, table([
      [t("offers.type"), (o) => h("span", {title: o.gpu_type}, o.display_name)],
      [t("offers.memory"), (o) => megabytes(o.memory_mb)],
      [t("offers.free"), (o) => `${o.free} / ${o.total}`],
      [t("offers.on_one_node"), (o) => o.max_free_per_node],
      [t("offers.on_demand"), (o) => money(o.price_per_gpu_hour_micros, o.currency)],
      [t("offers.spot"), (o) => money(o.spot, o.currency)],
      [t("offers.tflops"), (o) => h("span", {}, figure(o.measured?.figures?.training_tflops, 1), simulated(o))],
      [t("offers.perf_per_price"), (o) => figure(o.measured?.perf_per_price, 1)],
      [t("offers.resnet50"), (o) => figure(o.measured?.resnet50?.images_per_s?.amp, 1)],
      [t("offers.images_per_price"), (o) => figure(o.measured?.resnet50?.images_per_price, 0)],
      ["", (o) => h("a", {class: "button", href: `#/launch?gpu_type=${encodeURIComponent(o.gpu_type)}`},
                    t("offers.launch"))],
    ], shown, {empty: t("offers.none")}));
  };
  replace(main,
    h("div", {class: "toolbar"},
      h("input", {type: "search", placeholder: t("offers.filter"), "aria-label": t("offers.filter"),
                  oninput: (e) => { filter.text = e.target.value.toLowerCase(); draw(); }}),
      h("label", {}, t("offers.min_free"),
        h("input", {type: "number", min: 0, value: 0, class: "short",
                    oninput: (e) => { filter.minFree = Number(e.target.value) || 0; draw(); }})),
      h("label", {}, t("offers.sort"),
        h("select", {onchange: (e) => { filter.sort = e.target.value; draw(); }},
          h("option", {value: "price"}, t("offers.on_demand")),
          h("option", {value: "perf_per_price"}, t("offers.perf_per_price")),
          h("option", {value: "images_per_price"}, t("offers.images_per_price")),
          h("option", {value: "memory"}, t("offers.memory")),
          h("option", {value: "free"}, t("offers.free"))))),
    results);
  draw();
}

// --- Launch --------------------------------------------------------------------------------

export async function launchPage(main) {
  const [offers, templates, volumes] = await Promise.all([
    api("GET", "/v1/offers"), api("GET", "/v1/templates"), api("GET", "/v1/volumes")]);
  const wanted = new URLSearchParams(location.hash.split("?")[1] || "").get("gpu_type");
  const field = (name, label, input) =>
    h("div", {class: "field", dataset: {field: name}}, h("label", {for: `f-${name}`}, label), input,
      h("span", {class: "field-error", id: `e-${name}`}));
  const input = (name, attributes = {}) => h("input", {id: `f-${name}`, name, ...attributes});
  const form = h("form", {id: "launch", class: "card"});
  const estimate = h("p", {id: "estimate", class: "estimate"});
  const notice = h("p", {id: "launch-result", role: "status"});

  const gpuType = h("select", {id: "f-gpu_type", name: "gpu_type"},
    listOf(offers).map((o) => h("option", {value: o.gpu_type, selected: o.gpu_type === wanted},
                                `${o.display_name} (${o.free} free)`)));
  const template = h("select", {id: "f-template", name: "template"},
    h("option", {value: ""}, t("launch.none_template")),
    listOf(templates).map((tpl) => h("option", {value: tpl.name}, tpl.name)));
  // A VM runs the command (or the template's process form) on nodes that run VMs.
  const isolation = h("select", {id: "f-runtime", name: "runtime"},
    h("option", {value: ""}, t("launch.isolation_default")),
    h("option", {value: "vm"}, t("launch.isolation_vm")));
  const pricing = h("select", {id: "f-pricing", name: "pricing"},
    h("option", {value: "on_demand"}, t("launch.on_demand")),
    h("option", {value: "spot"}, t("launch.spot")),
    h("option", {value: "reserved"}, t("launch.reserved")));
  const share = h("select", {id: "f-gpu_milli", name: "gpu_milli"},
    h("option", {value: "1000"}, t("launch.whole")),
    ["500", "250"].map((m) => h("option", {value: m}, `${Number(m) / 10} %`)));

  replace(form,
    h("h1", {}, t("launch.title")),
    field("name", t("launch.name"), input("name", {maxlength: 128})),
    field("gpu_type", t("launch.gpu_type"), gpuType),
    field("gpu_count", t("launch.gpu_count"), input("gpu_count", {type: "number", min: 1, max: 8, value: 1})),
    field("gpu_milli", t("launch.fraction"), share),
    field("template", t("launch.template"), template),
    field("runtime", t("launch.isolation"), isolation),
    field("ssh_keys", t("launch.ssh_keys"),
          h("textarea", {id: "f-ssh_keys", name: "ssh_keys", rows: 2, placeholder: "ssh-ed25519 AAAA… you@laptop"})),
    field("image", t("launch.image"), input("image", {placeholder: "docker.io/library/python:3.11"})),
    field("command", t("launch.command"), input("command", {placeholder: "sleep infinity"})),
    listOf(volumes).length ? field("volumes", t("volumes.mount"), h("div", {class: "mounts"},
      listOf(volumes).map((v) => h("label", {class: "mount"},
        h("input", {type: "checkbox", name: "mount", value: v.id}), ` ${v.name} (${v.size_gb} GB) → `,
        h("input", {name: `path-${v.id}`, value: `/mnt/${v.name}`, class: "mount-path"}))))) : null,
    field("pricing", t("launch.pricing"), pricing),
    field("max_price_micros", t("launch.max_price"), input("max_price", {type: "number", min: 0, step: "0.01"})),
    field("reservation_id", t("launch.reservation"), input("reservation_id")),
    field("idle", t("launch.idle"), input("idle", {type: "number", min: 0, value: 0})),
    h("h2", {}, t("launch.estimate")),
    field("epochs", t("launch.epochs"), input("epochs", {type: "number", min: 0, max: 100000, value: 0})),
    estimate,
    h("button", {type: "submit", class: "primary"}, t("launch.submit")),
    notice);

  const body = () => {
    const v = (name) => form.elements[name].value.trim();
    const request = {gpu_type: v("gpu_type"), gpu_count: Number(v("gpu_count")),
                     pricing: v("pricing")};
    if (v("gpu_milli") !== "1000") request.gpu_milli = Number(v("gpu_milli"));
    if (v("name")) request.name = v("name");
    if (v("template")) request.template = v("template");
    if (v("runtime")) request.runtime = v("runtime");
    // A VM's user gets these keys (one a line); only a VM runs an SSH server.
    const keys = v("ssh_keys").split("\n").map((line) => line.trim()).filter((line) => line);
    if (v("runtime") === "vm" && keys.length) request.ssh_keys = keys;
    if (v("image")) request.image = v("image");
    if (v("command")) request.command = ["sh", "-c", v("command")];
    if (v("pricing") === "spot" && v("max_price")) {
      request.max_price_micros = Math.round(Number(v("max_price")) * 1_000_000);
    }
    if (v("pricing") === "reserved" && v("reservation_id")) request.reservation_id = v("reservation_id");
    const mounts = [...form.querySelectorAll("input[name=mount]:checked")].map((box) => ({
      volume_id: box.value, mount_path: form.elements[`path-${box.value}`].value.trim()}));
    if (mounts.length) request.volumes = mounts;
    return request;
  };
  const showFieldError = (error) => {
    for (const span of form.querySelectorAll(".field-error")) span.textContent = "";
    const span = error instanceof ApiError && error.field ? form.querySelector(`#e-${error.field}`) : null;
    if (span) span.textContent = error.message;
    return span !== null;
  };
  // With epochs, the estimate also times and prices that much ResNet-50 training from the type's
  // measured figures; a type not measured yet still shows its hourly price.
  const estimated = async () => {
    const epochs = Number(form.elements.epochs.value) || 0;
    if (epochs <= 0) return [await api("POST", "/v1/estimate", body()), null];
    try {
      return [await api("POST", "/v1/estimate", {...body(), work: {model: "resnet50", epochs}}), null];
    } catch (error) {
      if (!(error instanceof ApiError) || error.code !== "not_measured") throw error;
      return [await api("POST", "/v1/estimate", body()), error.message];
    }
  };
  let asked = 0;
  const refreshEstimate = async () => {
    const mine = ++asked;
    try {
      const [e, unmeasured] = await estimated();
      if (mine !== asked) return;
      showFieldError(null);
      const work = e.work ? h("p", {id: "estimate-work"}, t("launch.work", {
        epochs: e.work.epochs, time: duration(e.work.seconds), cost: money(e.work.cost_micros, e.currency),
        rate: e.work.images_per_s.toFixed(0)})) : null;
      replace(estimate, t("launch.per_hour", {amount: money(e.per_hour_micros.total, e.currency)}),
        h("small", {}, ` (${e.gpu_type}, ${e.pricing})`), work,
        unmeasured ? h("p", {id: "estimate-work", class: "muted"}, unmeasured) : null);
    } catch (error) {
      if (mine !== asked) return;
      replace(estimate, "—");
      if (!showFieldError(error)) replace(estimate, h("span", {class: "error"}, error.message));
    }
  };
  // Only the billing mode's own fields are shown.
  const showPricingFields = () => {
    form.querySelector("[data-field=max_price_micros]").hidden = pricing.value !== "spot";
    form.querySelector("[data-field=reservation_id]").hidden = pricing.value !== "reserved";
  };
  pricing.addEventListener("change", showPricingFields);
  showPricingFields();
  const showIsolationFields = () => {
    form.querySelector("[data-field=ssh_keys]").hidden = isolation.value !== "vm";
  };
  isolation.addEventListener("change", showIsolationFields);
  showIsolationFields();
  form.addEventListener("input", refreshEstimate);
  form.addEventListener("change", refreshEstimate);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const created = await api("POST", "/v1/instances", body());
      const idle = Number(form.elements.idle.value);
      if (idle > 0) {
        await api("PUT", `/v1/instances/${encodeURIComponent(created.id)}/idle-alert`,
                  {for_s: idle * 60, auto_stop: true});
      }
      replace(notice, t("launch.launched", {id: created.id}));
      location.hash = `#/instances/${encodeURIComponent(created.id)}`;
    } catch (error) {
      if (!showFieldError(error)) replace(notice, h("span", {class: "error"}, error.message));
    }
  });
  replace(main, form);
  await refreshEstimate();
}

// --- Instances -----------------------------------------------------------------------------

export async function instancesPage(main) {
  const show = async (cursor) => {
    const page = await api("GET", `/v1/instances?limit=${kPageSize}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
    replace(main,
      h("div", {class: "toolbar"},
        h("a", {class: "button primary", href: "#/launch"}, t("nav.launch")),
        h("button", {onclick: () => show(cursor)}, t("common.refresh"))),
      table([
        [t("instances.name"), (i) => h("a", {href: `#/instances/${encodeURIComponent(i.id)}`}, i.name)],
        [t("instances.state"), (i) => stateBadge(i.state)],
        [t("instances.gpus"), (i) => `${i.gpu_count} × ${i.gpu_type}`],
        [t("instances.price"), (i) => money(i.price_per_gpu_hour_micros, i.currency)],
        [t("instances.created"), (i) => dateTime(i.created_at)],
        [t("instances.reason"), (i) => i.reason],
      ], page.items, {empty: t("instances.none"), rowAttributes: (i) => ({dataset: {id: i.id}})}),
      h("div", {class: "pager"},
        cursor ? h("button", {onclick: () => show("")}, t("common.first")) : null,
        page.next_cursor ? h("button", {id: "next-page", onclick: () => show(page.next_cursor)},
                             t("common.next")) : null));
  };
  await show("");
}

export async function instancePage(main, id) {
  const path = `/v1/instances/${encodeURIComponent(id)}`;
  const instance = await api("GET", path);
  const events = await api("GET", `/v1/events?object=${encodeURIComponent(id)}&limit=100`);
  const logs = h("pre", {id: "logs", class: "logs"});
  const act = (label, method, suffix, question, body) =>
    h("button", {class: method === "DELETE" ? "danger" : "", dataset: {action: label},
                 onclick: async () => {
                   if (question && !confirm(t(question, {name: instance.name, node: instance.node_id}))) return;
                   try {
                     await api(method, `${path}${suffix}`, body);
                     await instancePage(main, id);
                   } catch (error) {
                     showError(main, error);
                   }
                 }}, t(`instance.${label}`));
  const running = instance.state === "running";
  // GPU charts once it has held GPUs; refreshed every 15 s while the page is shown.
  const charts = instance.run > 0 ? h("div", {id: "charts", class: "charts"}) : null;
  let chartRange = "1h";
  const refreshCharts = () => charts && drawGpuCharts(charts, id, chartRange).catch(() => {});
  if (charts) {
    const timer = setInterval(refreshCharts, 15_000);
    onLeave(() => clearInterval(timer));
  }
  const canStart = ["stopped", "failed", "preempted"].includes(instance.state);
  replace(main,
    h("h1", {}, instance.name, " ", stateBadge(instance.state)),
    h("div", {class: "toolbar"},
      running || instance.state === "starting" || instance.state === "pending"
        ? act("stop", "POST", "/stop", "instance.confirm_stop") : null,
      canStart ? act("start", "POST", "/start") : null,
      // A start waiting for the node that keeps its files may be let go elsewhere, without them.
      instance.state === "pending" && instance.start_on_node
        ? act("start_anywhere", "POST", "/start", "instance.confirm_start_anywhere", {anywhere: true})
        : null,
      instance.state !== "terminated" ? act("delete", "DELETE", "", "instance.confirm_delete") : null,
      running && instance.services.includes("jupyter")
        ? h("button", {id: "open-jupyter", onclick: () => openService(id, "jupyter")}, t("instance.jupyter"))
        : null),
    h("h2", {}, t("instance.details")),
    h("dl", {class: "details"},
      detail("ID", instance.id),
      detail(t("instances.gpus"), `${instance.gpu_count} × ${instance.gpu_type}`),
      detail(t("instances.node"), instance.node_id ?? "—"),
      detail(t("instances.price"), money(instance.price_per_gpu_hour_micros, instance.currency)),
      detail(t("instances.created"), dateTime(instance.created_at)),
      detail(t("instances.reason"), instance.reason || "—")),
    charts ? [h("h2", {}, t("instance.charts")),
      h("div", {class: "toolbar", id: "chart-ranges"}, Object.keys(kRanges).map((range) =>
        h("button", {dataset: {range}, onclick: () => { chartRange = range; refreshCharts(); }},
          range))),
      charts] : null,
    running ? [h("h2", {}, t("instance.terminal")), terminal(path)] : null,
    h("h2", {}, t("instance.events")),
    table([
      [t("billing.at"), (e) => dateTime(e.at)],
      [t("billing.kind"), (e) => e.kind],
      [t("events.message"), (e) => e.message],
    ], events.items, {empty: t("common.none")}),
    h("h2", {}, t("instance.logs")),
    logs);
  if (charts) refreshCharts();
  if (instance.run > 0) followLogs(`${path}/logs`, logs, ["pending", "starting", "running", "stopping"]
    .includes(instance.state));
}

// The instance's log into `pre`; while it may still write, followed as it streams
// (?follow=true answers chunk by chunk until the instance ends) until the page is left.
async function followLogs(path, pre, follow) {
  const aborter = new AbortController();
  onLeave(() => aborter.abort());
  try {
    const response = await fetch(`${path}${follow ? "?follow=true" : ""}`,
                                 {credentials: "same-origin", signal: aborter.signal});
    if (!response.ok) return;
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    for (;;) {
      const {value, done} = await reader.read();
      if (done) return;
      const atBottom = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
      pre.append(value);
      if (atBottom) pre.scrollTop = pre.scrollHeight;
    }
  } catch (error) {
    if (error.name !== "AbortError") pre.append(`\n[${error.message}]`);
  }
}

function detail(label, value) {
  return [h("dt", {}, label), h("dd", {}, value)];
}

async function openService(id, service) {
  const ticket = await api("POST", `/v1/instances/${encodeURIComponent(id)}/services/${service}/ticket`);
  window.open(ticket.path, "_blank", "noopener");
}

// A terminal over the exec API (POST .../exec, docs/api.md "Exec"): each line runs as `sh -c` in
// the instance's directory, with its environment, and its output streams in as it comes
// (stdout, stderr apart), then its exit status. Up and down recall earlier lines.
function terminal(path) {
  const output = h("pre", {class: "terminal-output", id: "terminal-output"});
  const line = h("input", {id: "terminal-input", class: "terminal-input", autocomplete: "off",
                           spellcheck: "false", placeholder: "nvidia-smi", "aria-label": "command"});
  const history = [];
  let recalled = 0;
  let aborter = null;
  onLeave(() => aborter?.abort());
  const print = (text, kind) => {
    const atBottom = output.scrollTop + output.clientHeight >= output.scrollHeight - 4;
    output.append(kind ? h("span", {class: kind}, text) : text);
    if (atBottom) output.scrollTop = output.scrollHeight;
  };
  const run = async (command) => {
    print(`$ ${command}\n`, "prompt");
    aborter = new AbortController();
    line.disabled = true;
    try {
      const response = await fetch(`${path}/exec`, {
        method: "POST", credentials: "same-origin", signal: aborter.signal,
        headers: {"Content-Type": "application/json", "X-CSRF-Token": csrfToken()},
        body: JSON.stringify({command: ["sh", "-c", command], timeout_s: 600}),
      });
      if (!response.ok) {
        const problem = await response.json().catch(() => ({}));
        print(`${problem.detail || response.statusText}\n`, "stderr");
        return;
      }
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let pending = "";
      for (;;) {
        const {value, done} = await reader.read();
        if (done) break;
        pending += value;
        let newline;
        while ((newline = pending.indexOf("\n")) >= 0) {
          const message = JSON.parse(pending.slice(0, newline));
          pending = pending.slice(newline + 1);
          if (message.stream) print(message.data, message.stream === "stderr" ? "stderr" : null);
          else if (message.exit_code !== undefined && message.exit_code !== 0) {
            print(`[exit ${message.exit_code}${message.error ? `: ${message.error}` : ""}]\n`, "stderr");
          }
        }
      }
    } catch (error) {
      if (error.name !== "AbortError") print(`${error.message}\n`, "stderr");
    } finally {
      line.disabled = false;
      line.focus();
    }
  };
  line.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && line.value.trim()) {
      history.push(line.value);
      recalled = history.length;
      const command = line.value;
      line.value = "";
      run(command);
    } else if (event.key === "ArrowUp" && recalled > 0) {
      line.value = history[--recalled];
    } else if (event.key === "ArrowDown" && recalled < history.length) {
      line.value = history[++recalled] ?? "";
    }
  });
  return h("div", {class: "terminal"}, output, line);
}
