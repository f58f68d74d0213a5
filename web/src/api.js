// The console's client of the public API (docs/api.md): same-origin requests that the session
// cookie authenticates, with the session's CSRF token on every request that changes something.
// Errors come back as ApiError, from the API's application/problem+json body.

const session = {csrfToken: ""};

export class ApiError extends Error {
  constructor(status, problem) {
    super(problem.detail || problem.title || `HTTP ${status}`);
    this.status = status;
    this.code = problem.code || "";
    this.problem = problem;
  }
  // The request member the error is about, when the API names one ("field 'gpu_count' ...").
  get field() {
    const match = /field '([a-z_]+)'/.exec(this.message);
    return match ? match[1] : "";
  }
}

export function setCsrfToken(token) {
  session.csrfToken = token || "";
}

// For requests made with fetch itself (streams): what api() sends as X-CSRF-Token.
export function csrfToken() {
  return session.csrfToken;
}

// api("GET", "/v1/instances") -> the parsed JSON body (or the text of a text/plain answer).
// `idempotencyKey`: sent as Idempotency-Key (a purchase or booking retried is made once).
export async function api(method, path, body, {idempotencyKey} = {}) {
  const headers = {Accept: "application/json"};
  if (idempotencyKey) headers["Idempotency-Key"] = idempotencyKey;
  if (method !== "GET" && method !== "HEAD") headers["X-CSRF-Token"] = session.csrfToken;
  let payload;
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    payload = JSON.stringify(body);
  }
  const response = await fetch(path, {method, headers, body: payload, credentials: "same-origin"});
  const type = response.headers.get("Content-Type") || "";
  if (!response.ok) {
    const problem = type.includes("json") ? await response.json() : {detail: await response.text()};
    throw new ApiError(response.status, problem);
  }
  if (response.status === 204) return null;
  return type.includes("json") ? response.json() : response.text();
}

// Every item of a paged listing ({items, next_cursor}), at most `max`.
export async function all(path, max = 10000) {
  const items = [];
  let cursor = "";
  const separator = path.includes("?") ? "&" : "?";
  for (;;) {
    const page = await api("GET", `${path}${separator}limit=500${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
    items.push(...page.items);
    cursor = page.next_cursor;
    if (!cursor || items.length >= max) return items;
  }
}
