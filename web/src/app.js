// The console's frame: who is signed in, the navigation, and the page of the address's hash
// (#/instances, #/instances/i-abc, ...). Pages are functions that fill the main element; each
// reads the API itself (api.js).
import {api, ApiError, setCsrfToken} from "./api.js";
import {h, replace} from "./dom.js";
import {kLanguages, language, setLanguage, t} from "./i18n.js";
import {dashboardPage, keysPage, signInPage} from "./pages-account.js";
import {billingPage} from "./pages-billing.js";
import {instancePage, instancesPage, launchPage, offersPage} from "./pages-compute.js";
import {alertsPage, nodesPage, pricesPage, tenantsPage} from "./pages-operator.js";
import {jobPage, jobsPage, reservationsPage, volumesPage} from "./pages-work.js";

const session = {principal: null};
// What the page on screen started that must stop when another replaces it (timers, streams).
let leaving = [];

export function onLeave(cleanup) {
  leaving.push(cleanup);
}

const routes = [
  {path: /^\/?$/, nav: "dashboard", page: dashboardPage},
  {path: /^\/offers$/, nav: "offers", page: offersPage},
  {path: /^\/launch$/, nav: "launch", page: launchPage},
  {path: /^\/instances$/, nav: "instances", page: instancesPage},
  {path: /^\/instances\/([^/]+)$/, nav: "instances", page: instancePage},
  {path: /^\/jobs$/, nav: "jobs", page: jobsPage},
  {path: /^\/jobs\/([^/]+)$/, nav: "jobs", page: jobPage},
  {path: /^\/reservations$/, nav: "reservations", page: reservationsPage},
  {path: /^\/volumes$/, nav: "volumes", page: volumesPage},
  {path: /^\/billing$/, nav: "billing", page: billingPage},
  {path: /^\/keys$/, nav: "keys", page: keysPage},
  {path: /^\/nodes$/, nav: "nodes", page: nodesPage, operator: true},
  {path: /^\/alerts$/, nav: "alerts", page: alertsPage, operator: true},
  {path: /^\/tenants$/, nav: "tenants", page: tenantsPage, operator: true},
  {path: /^\/prices$/, nav: "prices", page: pricesPage, operator: true},
];
const kTenantPages = ["dashboard", "offers", "launch", "instances", "jobs", "reservations",
                      "volumes", "billing", "keys"];
const kOperatorPages = ["nodes", "alerts", "tenants", "prices"];

function isOperator() {
  const role = session.principal && session.principal.role;
  return role === "admin" || role === "operator";
}

function navigation(active) {
  const items = isOperator() ? [...kTenantPages, ...kOperatorPages] : kTenantPages;
  const href = (item) => (item === "dashboard" ? "#/" : `#/${item}`);
  return h("nav", {},
    h("span", {class: "brand"}, "gpurent"),
    items.map((item) => h("a", {href: href(item), class: item === active ? "active" : null,
                               dataset: {nav: item}}, t(`nav.${item}`))),
    h("span", {class: "spacer"}),
    languageSwitch(),
    session.principal
      ? [h("span", {class: "who", title: session.principal.key_id},
          `${session.principal.tenant_id} · ${session.principal.role}`),
        h("button", {id: "sign-out", onclick: signOut}, t("nav.signout"))]
      : null);
}

function languageSwitch() {
  return h("select", {id: "language", "aria-label": "language", onchange: (event) => {
    setLanguage(event.target.value);
    render();
  }}, Object.entries(kLanguages).map(([code, name]) =>
    h("option", {value: code, selected: code === language()}, name)));
}

async function signOut() {
  try {
    await api("DELETE", "/v1/session");
  } finally {
    session.principal = null;
    setCsrfToken("");
    location.hash = "#/";
    render();
  }
}

// Called by the sign-in page with the new session.
export function signedIn(principal) {
  session.principal = principal;
  setCsrfToken(principal.csrf_token);
  render();
}

export function principal() {
  return session.principal;
}

// An error where the page's content would be; a lost session goes back to signing in.
export function showError(container, error) {
  if (error instanceof ApiError && error.status === 401) {
    session.principal = null;
    render();
    return;
  }
  replace(container, h("p", {class: "error", role: "alert"},
    t("common.error", {detail: error.message})));
}

async function render() {
  for (const cleanup of leaving) cleanup();
  leaving = [];
  document.title = t("app.title");
  const root = document.getElementById("app");
  const main = h("main", {});
  // "#/launch?gpu_type=h100-80g": the page's path, then what it reads itself.
  const path = location.hash.replace(/^#/, "").split("?")[0];
  if (!session.principal) {
    replace(root, navigation(""), main);
    signInPage(main);
    return;
  }
  const route = routes.find((r) => r.path.test(path) && (!r.operator || isOperator())) || routes[0];
  replace(root, navigation(route.nav), main);
  try {
    await route.page(main, ...(path.match(route.path) || []).slice(1).map(decodeURIComponent));
  } catch (error) {
    showError(main, error);
  }
}

async function start() {
  setLanguage(language());
  try {
    const current = await api("GET", "/v1/session");
    session.principal = current;
    setCsrfToken(current.csrf_token);
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
  }
  window.addEventListener("hashchange", render);
  await render();
  document.body.dataset.ready = "true";  // the browser tests wait for this
  performance.mark("gpurent-ready");  // and bench/console_bench.py measures to it
}

start();
