"""The API's security, route by route, driven by docs/openapi.json (issue 27): every operation the
document lists is visited, so a new route that none of these tests covers fails the suite.

Each operation is put in one class, from the document where it says (an empty `security`: public;
the `agent` tag and a `Bearer <join token>`/`Bearer <node credential>` summary: agent; a summary
marked "(operators)" or "(operators; ...)" with a documented 403: operator-only; the document's
default security with a documented 401: tenant-facing), else from CLASS_TABLE below. Then, on one
`gpurent dev` for the module, where tenant B owns objects of every kind:

- cross-tenant: every route that names a tenant's object in its path, called with tenant A's keys
  and B's ids, names and near misses of them: 404 problem+json with no trace of B in it, and B's
  objects unchanged when B reads them again; B's ids and names in a query or a body get what an id
  that names nothing gets (and 404 where the document says "others get 404"); B's
  Idempotency-Keys make A's own objects; A's listings show nothing of B; a node's credential
  reaches nothing of another node's;
- roles: each operator route with every lesser role's key is 403 (the same for ids that exist and
  ids that do not), without a key 401; each tenant-facing route without a key, with a bad, revoked,
  expired or an agent's credential 401, from a console session without its CSRF token 403; who may
  mint and revoke which keys (ROLES); with its own tenant's objects, by key and by console session,
  a read-only key is 403 on every route that changes something, members and read-only keys on the
  keys and the audit log; a key scoped to reading instances reaches nothing else; no key makes one
  of more scopes or a longer life than its own;
- create bodies with extra privileged fields (tenant_id of another tenant, role, balance, prices,
  node_id, state, id, created_at, chosen secrets...): 4xx, or ignored (read back), never applied;
- bodies over the 1 MiB limit (with a length, chunked, or a length that lies), JSON nested 100,000
  deep, malformed JSON and non-JSON content types to every route that takes a body: a 4xx
  problem+json, and the server stays up, answers and logs nothing broken after each batch (the
  chunked bodies last: what they break may show only a few requests later).

The server runs without rate limits: this suite calls every route many times with one key
(test_access.py tests the limits). Adding a role is one line in ROLES; a new route, parameter or
body fails the first test until the tables below cover it."""

import datetime
import hashlib
import http.client as http_client
import json
import os
import re
import signal
import time
import uuid
from typing import NamedTuple

import pytest

from conftest import Platform, Response, http, problem, wait_for
from test_console import sign_in, with_cookie
from test_copy import tar_gz, upload

DOCUMENT = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "openapi.json")
HTTP_METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")
MAX_BODY_BYTES = 1 << 20  # docs/api.md: request bodies are at most 1 MiB (413 payload_too_large)


# --- Roles ---------------------------------------------------------------------------------------

class Role(NamedTuple):
    rank: int  # admin > operator > tenant-admin > tenant-member > read-only (docs/api.md)
    operator: bool  # may call the operator-only routes (and sees every tenant)
    writes: bool  # may call a route that changes something (read-only keys: 403)
    manages: bool  # the keys and audit areas: mints, lists and revokes keys, reads the audit log


# Every role, with what it may do. A new role is one line here: the tests below mint a key of it
# (in tenant A's tenant unless it is an operator role; a tenant role's in B's too) and check it
# against every route.
ROLES = {
    "admin": Role(rank=4, operator=True, writes=True, manages=True),
    "operator": Role(rank=3, operator=True, writes=True, manages=True),
    "tenant-admin": Role(rank=2, operator=False, writes=True, manages=True),
    "tenant-member": Role(rank=1, operator=False, writes=True, manages=False),
    "read-only": Role(rank=0, operator=False, writes=False, manages=False),
}
# Names a key may be made with that read as another role: the role the key then reports.
ALIASES = {"tenant": "tenant-admin"}


def mints(role):
    """The roles of the keys `role` may create and revoke: none unless it manages keys, else those
    at or below its own (no key grants more than its maker)."""
    spec = ROLES[role]
    return frozenset(t for t, s in ROLES.items() if spec.manages and s.rank <= spec.rank)


LESSER_ROLES = [name for name, role in ROLES.items() if not role.operator]
OPERATOR_ROLES = [name for name, role in ROLES.items() if role.operator]
# The operator role trusted least: the caller of the operator routes below.
LEAST_OPERATOR = min(OPERATOR_ROLES, key=lambda name: ROLES[name].rank)


# --- The document and its classes ----------------------------------------------------------------

PUBLIC, AGENT, TENANT, OPERATOR = "public", "agent", "tenant-facing", "operator-only"

# Where the document does not say. The services proxy's security is "a key, or none" because a
# browser comes with a cookie or a login ticket instead; it is the instance owner's (docs/api.md).
CLASS_TABLE = {
    **{(method, "/i/{id}/{service}/{path}"): TENANT
       for method in ("GET", "POST", "PUT", "PATCH", "DELETE")},
}
OPERATOR_MARK = re.compile(r"\(operators[);]")
AGENT_MARK = re.compile(r"Bearer <(join token|node credential)>")


class Operation(NamedTuple):
    method: str
    path: str
    spec: dict
    cls: str  # None: in no class

    def __str__(self):
        return f"{self.method} {self.path}"

    @property
    def key(self):
        return (self.method, self.path)

    @property
    def params(self):
        return re.findall(r"\{(\w+)\}", self.path)

    def query_params(self):
        return {p["name"]: p for p in self.parameters() if p["in"] == "query"}

    def parameters(self):
        return [resolve(p) for p in self.spec.get("parameters", [])]

    def body_type(self):
        """The request body's content type (None: the operation takes no body)."""
        content = self.spec.get("requestBody", {}).get("content", {})
        return next(iter(content), None)

    def body_required(self):
        return self.spec.get("requestBody", {}).get("required", False)

    def body_properties(self):
        content = self.spec.get("requestBody", {}).get("content", {})
        return properties_of(resolve(next(iter(content.values()), {}).get("schema", {})))


def properties_of(schema):
    """A schema's property names, those of every part of an allOf included."""
    names = set(schema.get("properties", {}))
    for part in schema.get("allOf", []):
        names |= properties_of(resolve(part))
    return names


with open(DOCUMENT) as f:
    DOC = json.load(f)


def resolve(node):
    while isinstance(node, dict) and "$ref" in node:
        target = DOC
        for part in node["$ref"].lstrip("#/").split("/"):
            target = target[part]
        node = target
    return node


def classify(method, path, spec):
    if (method, path) in CLASS_TABLE:
        return CLASS_TABLE[(method, path)]
    security = spec.get("security")
    responses = spec.get("responses", {})
    if security == []:
        return PUBLIC
    if security is not None or "401" not in responses:
        return None  # a requirement of its own, or no 401: say in CLASS_TABLE what it is
    if "agent" in spec.get("tags", []):
        return AGENT if AGENT_MARK.search(spec.get("summary", "")) else None
    if OPERATOR_MARK.search(spec.get("summary", "")) and "403" in responses:
        return OPERATOR  # else "(operators; tenants their own)": a tenant's too
    return TENANT


def operations_of(document):
    found = []
    for path, item in document["paths"].items():
        shared = item.get("parameters", [])
        for method, spec in item.items():
            if method not in HTTP_METHODS:
                continue
            spec = {**spec, "parameters": shared + spec.get("parameters", [])}
            method = method.upper()
            found.append(Operation(method, path, spec, classify(method, path, spec)))
    return found


OPERATIONS = operations_of(DOC)


def of_class(*classes):
    return [op for op in OPERATIONS if op.cls in classes]


def is_proxied(op):
    """The services proxy: forwarded to the instance's service, bodies streamed, unbounded."""
    return op.path.startswith("/i/")


def under(op, prefix):
    """Whether op's path is prefix or below it."""
    return op.path == prefix or op.path.startswith(prefix + "/")


# What a route needs of a key beyond its role's class (docs/api.md, "Roles, scopes, expiry"):
# Routes every valid key reaches, whatever its role and scopes: the caller itself, the catalog,
# the console session (signing out included).
OPEN_ROUTES = {"/v1/whoami", "/v1/gpu-types", "/v1/offers", "/v1/session"}
# POSTs that compute an answer and change nothing: reads.
READING_POSTS = {("POST", "/v1/estimate"), ("POST", "/v1/reservations/quote")}
# GETs that open a tunnel into a workload: a shell there changes what it likes (server/proxy.cc).
WRITING_GETS = {("GET", "/v1/instances/{id}/ssh")}
# Areas that need a tenant admin (or an operator), for reading too.
ADMIN_AREAS = ("/v1/api-keys", "/v1/audit")


def changes(op):
    """Whether op may change something: a read-only key is 403 there (OPEN_ROUTES aside).
    Everything the services proxy forwards acts on a workload, a GET too (server/proxy.cc), and
    so does an SSH tunnel."""
    return (is_proxied(op) or op.key in WRITING_GETS
            or (op.method not in ("GET", "HEAD") and op.key not in READING_POSTS))


def refused_to(role, op):
    """Whether `role` is 403 on op whatever object it names (its own tenant's included)."""
    spec = ROLES[role]
    if op.cls == OPERATOR:
        return not spec.operator
    if op.path in OPEN_ROUTES:
        return False
    return (any(under(op, area) for area in ADMIN_AREAS) and not spec.manages) or (
        changes(op) and not spec.writes)


# --- What fills a route's parameters -------------------------------------------------------------

# A path parameter, by the literal segment before it and its name -> the kind of object it names.
PARAM_KINDS = {
    ("instances", "id"): "instance", ("services", "service"): "service",
    ("i", "id"): "instance", ("i", "service"): "service", ("i", "path"): "service_path",
    ("jobs", "id"): "job", ("reservations", "id"): "reservation", ("volumes", "id"): "volume",
    ("uploads", "id"): "upload", ("packages", "id"): "package", ("api-keys", "id"): "api_key",
    ("alerts", "id"): "alert", ("tenants", "id"): "tenant", ("invoices", "id"): "month",
    ("nodes", "id"): "node", ("gpus", "index"): "gpu_index", ("templates", "name"): "template",
    ("rules", "name"): "alert_rule", ("console", "name"): "console_file",
}
# Kinds that are a tenant's own: another tenant's is 404.
TENANT_KINDS = {"instance", "job", "reservation", "volume", "upload", "package", "api_key",
                "alert", "tenant"}
# Kinds that belong to no tenant, and why a tenant-facing route naming one is not cross-tenant.
SHARED_KINDS = {
    "service": "a service name of the instance named beside it",
    "service_path": "a path below the service",
    "month": "a month: each tenant has its own statement of it; ?tenant= is tested instead",
    "template": "the template catalog is the platform's, read by every tenant",
    "console_file": "the console's files are public",
    "node": "nodes are operators'", "gpu_index": "nodes are operators'",
    "alert_rule": "alert rules are operators'",
}
# Query parameters that name an object -> its kind.
QUERY_KINDS = {"tenant": "tenant", "job": "job", "object": "instance", "instance": "instance",
               "gpu": "gpu", "node": "node", "upload": "upload_complete", "id": "upload_complete",
               "key": "api_key"}
# Query parameters that name no object (paging, filters by value, options).
PLAIN_QUERY = {"limit", "cursor", "state", "follow", "tasks", "task", "rank", "kind", "from", "to",
               "format", "metric", "step", "agg", "resolution", "history", "path", "gpu_type",
               "after", "watch", "wait_s", "run", "offset", "sort"}
# What else an operation needs in its query to get past its own checks.
SAMPLE_QUERIES = {
    ("GET", "/v1/metrics/query"): {"metric": "gpu_util"},
    ("GET", "/v1/audit"): {"limit": "500"},
    ("POST", "/v1/instances/{id}/files"): {"path": "sec"},
    ("POST", "/v1/volumes/{id}/files"): {"path": "sec"},
    ("POST", "/v1/agent/logs"): {"run": "1", "offset": "0"},
}


def param_kinds(op):
    """[(parameter, kind or None)] of op's path parameters, by the literal segment before each."""
    found, literal = [], None
    for segment in op.path.split("/"):
        name = re.fullmatch(r"\{(\w+)\}", segment)
        if name:
            found.append((name.group(1), PARAM_KINDS.get((literal, name.group(1)))))
        else:
            literal = segment
    return found


def later(hours):
    at = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=hours)
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def unique(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def fake_gpu():
    return {"uuid": f"GPU-{uuid.uuid4()}", "index": 0, "type": "a100-80g", "name": "A100",
            "memory_mb": 81920}


# A valid body for each operation that takes one: (world, the caller's tenant, another tenant).
SAMPLE_BODIES = {
    ("POST", "/v1/session"): lambda w, me, other: {"key": w.key_of_tenant(me)},
    ("POST", "/v1/instances"): lambda w, me, other: {"gpu_type": "h100-80g",
                                                     "command": "sleep 600"},
    ("POST", "/v1/jobs"): lambda w, me, other: {"gpu_type": "h100-80g", "command": "sleep 600"},
    ("POST", "/v1/estimate"): lambda w, me, other: {"gpu_type": "h100-80g", "gpu_count": 2},
    ("POST", "/v1/reservations"): lambda w, me, other: {
        "gpu_type": "h100-80g", "gpu_count": 1, "start": later(5), "end": later(6)},
    ("POST", "/v1/reservations/quote"): lambda w, me, other: {
        "gpu_type": "h100-80g", "gpu_count": 1, "start": later(5), "end": later(6)},
    ("POST", "/v1/volumes"): lambda w, me, other: {"name": unique("vol"), "size_gb": 1},
    ("POST", "/v1/uploads"): lambda w, me, other: {"size": 3,
                                                   "sha256": hashlib.sha256(b"abc").hexdigest()},
    ("PUT", "/v1/uploads/{id}"): lambda w, me, other: b"a",
    ("POST", "/v1/packages"): lambda w, me, other: {"product": w.product},
    ("POST", "/v1/api-keys"): lambda w, me, other: {"name": unique("key")},
    ("POST", "/v1/instances/{id}/exec"): lambda w, me, other: {"command": ["true"],
                                                               "timeout_s": 10},
    ("PUT", "/v1/instances/{id}/idle-alert"): lambda w, me, other: {"below_percent": 1,
                                                                    "for_s": 86400},
    ("POST", "/v1/instances/{id}/start"): lambda w, me, other: {"anywhere": True},
    # Operators'. A tenant would most like to change its own limits, balance and prices.
    ("POST", "/v1/tenants"): lambda w, me, other: {"name": unique("tenant")},
    ("POST", "/v1/billing/topups"): lambda w, me, other: {"tenant_id": me, "amount_micros": 1},
    ("PUT", "/v1/tenants/{id}/quota"): lambda w, me, other: {"max_instances": 1000},
    ("PUT", "/v1/billing/settings"): lambda w, me, other: {
        "tenant_id": me, "warning_threshold_micros": 1, "credit_limit_micros": 0},
    ("POST", "/v1/join-tokens"): lambda w, me, other: {"description": "sec", "ttl_s": 3600},
    ("PUT", "/v1/templates/{name}"): lambda w, me, other: {
        "description": "sec", "process_command": ["sleep", "infinity"]},
    ("PUT", "/v1/prices"): lambda w, me, other: {"effective_at": later(24 * 365),
                                                 "minimum_billed_seconds": 60},
    ("PUT", "/v1/packages/products"): lambda w, me, other: {
        "name": w.product, "gpu_type": "a100-80g", "gpu_hours": 1, "price_micros": 1_000_000,
        "validity_days": 30},
    ("POST", "/v1/training-benchmarks"): lambda w, me, other: {"instance_id": w.values["instance"]},
    ("POST", "/v1/alerts/rules"): lambda w, me, other: {
        "name": w.values["alert_rule"], "metric": "gpu_temp", "comparison": ">",
        "threshold": 999, "for_s": 60},
    # Agents'.
    ("POST", "/v1/agent/register"): lambda w, me, other: {
        "name": unique("sec-node"), "gpus": [fake_gpu()], "simulated": True},
    ("POST", "/v1/agent/report"): lambda w, me, other: {"applied_generation": 0,
                                                        "workloads": []},
    ("POST", "/v1/agent/logs"): lambda w, me, other: b"log line\n",
}


# --- The module's platform, and the world of objects on it ---------------------------------------

class World:
    """`gpurent dev` with tenants A (the attacker) and B (the victim, owning one of everything),
    a key of every role, and a second (registered by hand) node whose credential is an agent's."""

    def __init__(self, platform):
        self.platform = platform
        self.values = {}  # kind -> B's object (or the platform's, for shared kinds)
        self.names = {}  # kind -> the name B gave it
        self.a_values = {}  # kind -> A's own object
        self.idempotent = {}  # (method, path) -> (Idempotency-Key, body, B's object id)
        self.tenant_keys = {}  # tenant id -> an API key of it

    def call(self, method, path, key=None, body=None, **kwargs):
        """A request with exactly these credentials (None: none at all)."""
        return http(self.platform.url, method, path, key, body, **kwargs)

    def ok(self, response, *statuses):
        assert response.status in (statuses or (200, 201)), (response.status, response.body)
        return response.json() if response.body else None

    def key_of_tenant(self, tenant_id):
        return self.tenant_keys[tenant_id]

    def build(self):
        p = self.platform
        admin = p.admin_key
        self.admin_role = self.ok(self.call("GET", "/v1/whoami", admin))["role"]
        self.operator_tenant = self.ok(self.call("GET", "/v1/whoami", admin))["tenant_id"]
        self.a_tenant, self.a_key = p.new_tenant(unique("alpha"))
        self.a_role = self.ok(self.call("GET", "/v1/whoami", self.a_key))["role"]
        self.b_tenant, self.b_key = p.new_tenant(unique("bravo"), topup_micros=1_000_000_000)
        self.tenant_keys = {self.a_tenant: self.a_key, self.b_tenant: self.b_key}
        self.b_tenant_name = next(t["name"] for t in self.ok(self.call(
            "GET", "/v1/tenants", admin))["items"] if t["id"] == self.b_tenant)

        # A key of every role: operators' in the platform's tenant, the others' in A's; and one
        # of every tenant role in B's, for what a role may do to its own tenant's objects.
        self.keys = {self.admin_role: admin}
        self.own_keys = {}
        for role, spec in ROLES.items():
            if role not in self.keys:
                body = {"role": role, "name": f"sec-{role}"}
                if not spec.operator:
                    body["tenant_id"] = self.a_tenant
                self.keys[role] = self.ok(self.call("POST", "/v1/api-keys", admin, body))["key"]
            if not spec.operator:
                self.own_keys[role] = self.ok(self.call("POST", "/v1/api-keys", admin, {
                    "role": role, "name": f"sec-bravo-{role}", "tenant_id": self.b_tenant}))["key"]
        # Narrowed keys: B's tenant admin that may only read instances; A's that may only
        # manage keys, for a day; A's that expires in seconds.
        self.scoped_key = self.ok(self.call("POST", "/v1/api-keys", admin, {
            "role": "tenant-admin", "name": "sec-bravo-scoped", "tenant_id": self.b_tenant,
            "scopes": ["instances:read"]}))["key"]
        narrow = self.ok(self.call("POST", "/v1/api-keys", admin, {
            "role": "tenant-admin", "name": "sec-narrow", "tenant_id": self.a_tenant,
            "scopes": ["keys:write"], "expires_at": later(24)}))
        self.narrow_key, self.narrow_expires_at = narrow["key"], narrow["expires_at"]
        soon = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=2)
        self.expiring_key = self.ok(self.call("POST", "/v1/api-keys", admin, {
            "role": "tenant-admin", "name": "sec-expiring", "tenant_id": self.a_tenant,
            "expires_at": soon.strftime("%Y-%m-%dT%H:%M:%S.") + f"{soon.microsecond // 1000:03d}Z"}
        ))["key"]

        # The platform's shared objects.
        nodes = self.ok(self.call("GET", "/v1/nodes", admin))["items"]
        self.dev_node = nodes[0]
        self.values.update(node=self.dev_node["id"], gpu_index="0", console_file="app.js",
                           service="web", service_path="sec",
                           template=unique("sec-template"), alert_rule=unique("sec-rule"))
        self.product = unique("sec-product")
        self.ok(self.call("PUT", f"/v1/templates/{self.values['template']}", admin,
                          SAMPLE_BODIES[("PUT", "/v1/templates/{name}")](self, None, None)))
        self.ok(self.call("POST", "/v1/alerts/rules", admin,
                          SAMPLE_BODIES[("POST", "/v1/alerts/rules")](self, None, None)))
        self.ok(self.call("PUT", "/v1/packages/products", admin,
                          SAMPLE_BODIES[("PUT", "/v1/packages/products")](self, None, None)))

        # A second node, registered by hand: its credential is an agent's (a100 GPUs, which no
        # work here asks for).
        self.join_token = self.ok(self.call("POST", "/v1/join-tokens", admin, {}))["token"]
        registered = self.ok(self.call("POST", "/v1/agent/register", self.join_token,
                                       SAMPLE_BODIES[("POST", "/v1/agent/register")](
                                           self, None, None)))
        self.fake_node, self.node_credential = registered["node_id"], registered["credential"]

        # B's objects, one of every kind, the creations under an Idempotency-Key.
        b = self.b_key

        def create(kind, method, path, body, name=None):
            idem = unique("idem")
            made = self.ok(self.call(method, path, b, body, headers={"Idempotency-Key": idem}))
            self.values[kind] = made["id"]
            self.idempotent[(method, path)] = (idem, body, made["id"])
            if name:
                self.names[kind] = name
            return made

        name = unique("bravo-instance")
        create("instance", "POST", "/v1/instances",
               {"name": name, "gpu_type": "h100-80g", "command": "sleep 600", "services": ["web"]},
               name)
        name = unique("bravo-job")
        create("job", "POST", "/v1/jobs",
               {"name": name, "gpu_type": "h100-80g", "command": "sleep 600"}, name)
        name = unique("bravo-volume")
        create("volume", "POST", "/v1/volumes", {"name": name, "size_gb": 1}, name)
        create("reservation", "POST", "/v1/reservations",
               {"gpu_type": "h100-80g", "gpu_count": 1, "start": later(2), "end": later(3)})
        create("package", "POST", "/v1/packages", {"product": self.product})
        # An upload half sent (what another tenant's PUT would poison) and a complete one.
        self.values["upload"] = self.ok(self.call("POST", "/v1/uploads", b, {
            "size": 10, "sha256": hashlib.sha256(b"0123456789").hexdigest()}))["id"]
        self.ok(self.call("PUT", f"/v1/uploads/{self.values['upload']}?offset=0", b,
                          raw=b"01234", headers={"Content-Type": "application/octet-stream"}))
        self.values["upload_complete"] = upload(p, b, tar_gz({"bravo.txt": b"bravo\n"}))
        second = self.ok(self.call("POST", "/v1/api-keys", b, {"name": "bravo-second"}))
        self.values["api_key"], self.b_second_key = second["id"], second["key"]
        self.values["tenant"] = self.b_tenant
        self.names["tenant"] = self.b_tenant_name
        self.values["month"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m")
        instance = p.wait_state(self.values["instance"], "running", b)
        self.values["gpu"] = instance["gpus"][0]
        wait_for(lambda: self.ok(self.call("GET", f"/v1/jobs/{self.values['job']}", b))
                 ["state"] == "running", what="B's job to run")
        # The platform's built-in idle rule makes B's idle instance a pending alert: B's to ack.
        alert_id = f"instance_idle:{self.values['instance']}"
        wait_for(lambda: any(a["id"] == alert_id for a in
                             self.ok(self.call("GET", "/v1/alerts", b))["items"]),
                 what="B's idle alert")
        self.values["alert"] = alert_id
        self.b_session, self.b_cookie, _ = sign_in(p, b)

        # A's own objects, for the routes that take one of A's beside one of B's.
        self.a_values["volume"] = self.ok(self.call("POST", "/v1/volumes", self.a_key,
                                                    {"name": "alpha-volume", "size_gb": 1}))["id"]
        self.a_values["upload_complete"] = upload(p, self.a_key, tar_gz({"a.txt": b"a\n"}))
        self.a_values["month"] = self.values["month"]
        self.sandboxed = self.dev_node.get("isolation") == "sandbox"
        if self.sandboxed:  # else the node runs one tenant's processes at a time: B's
            # Mounting A's volume places it on the node, so copies into it get past that check.
            launched = self.ok(self.call("POST", "/v1/instances", self.a_key, {
                "gpu_type": "h100-80g", "command": "sleep 600",
                "volumes": [{"volume_id": self.a_values["volume"], "mount_path": "/data"}]}))
            self.a_values["instance"] = launched["id"]
            p.wait_state(launched["id"], "running", self.a_key)

        # Every string that would show B's objects to someone else.
        self.b_traces = {v for k, v in self.values.items() if k in TENANT_KINDS | {
            "upload_complete", "gpu"}} | set(self.names.values()) | {
            self.b_key, self.b_second_key, self.b_cookie, self.b_session["key_id"],
            self.b_session["csrf_token"], self.scoped_key, *self.own_keys.values()}
        return self

    # B's objects as B reads them, without what changes on its own (metering, telemetry).
    VOLATILE = {"balance_micros", "telemetry", "price_per_gpu_hour_micros", "last_heartbeat",
                "history", "active_since", "value", "fired_at", "state_since"}

    def snapshot(self):
        b, v = self.b_key, self.values
        reads = {
            "instance": f"/v1/instances/{v['instance']}", "job": f"/v1/jobs/{v['job']}",
            "volume": f"/v1/volumes/{v['volume']}", "upload": f"/v1/uploads/{v['upload']}",
            "upload_complete": f"/v1/uploads/{v['upload_complete']}",
            "package": f"/v1/packages/{v['package']}", "reservations": "/v1/reservations",
            "api_keys": "/v1/api-keys", "quota": f"/v1/tenants/{self.b_tenant}/quota",
            "settings": "/v1/billing/settings", "alerts": "/v1/alerts",
            "logs": f"/v1/instances/{v['instance']}/logs",
            "instance_by_name": f"/v1/instances/{self.names['instance']}",
        }
        seen = {}
        for what, path in reads.items():
            response = self.call("GET", path, b)
            assert response.status == 200, (what, response.status, response.body)
            if what == "alerts":
                # Which of B's alerts are pending comes and goes with the simulated load: an idle
                # alert pends from its instance's start until its GPU's first loaded sample, a few
                # seconds later. That no one else acknowledged one is what must not change.
                seen[what] = sorted(a["id"] for a in response.json()["items"]
                                    if a.get("acknowledged"))
                continue
            seen[what] = (strip(response.json(), self.VOLATILE) if what != "logs"
                          else response.body)
        seen["second_key"] = self.call("GET", "/v1/whoami", self.b_second_key).status
        seen["session"] = http(self.platform.url, "GET", "/v1/session",
                               headers=with_cookie(self.b_cookie)).status
        return seen

    def fill(self, op, values, bogus=False):
        """The operation's path with its parameters filled from values (kind -> value): the
        path, and the kinds used; raises KeyError naming a parameter no table fills."""
        out, kinds, literal = [], [], None
        for segment in op.path.split("/"):
            found = re.fullmatch(r"\{(\w+)\}", segment)
            if not found:
                literal = segment
                out.append(segment)
                continue
            kind = PARAM_KINDS[(literal, found.group(1))]
            kinds.append(kind)
            value = values[kind]
            if bogus and kind in TENANT_KINDS | {"node", "template", "alert_rule"}:
                value = bogus_like(value)
            out.append(value)
        return "/".join(out), kinds

    def body(self, op, me, other):
        make = SAMPLE_BODIES[op.key]
        return make(self, me, other)


def strip(value, keys):
    if isinstance(value, dict):
        return {k: strip(v, keys) for k, v in value.items() if k not in keys}
    if isinstance(value, list):
        return [strip(v, keys) for v in value]
    return value


def bogus_like(value):
    """An id of the same shape that names nothing."""
    prefix, _, rest = value.rpartition("-") if "-" in value else ("", "", value)
    return (prefix + "-" if prefix else "") + "z" * len(rest) if rest else "zzzz"


def near_misses(value):
    """Values one typo away from value: a "did you mean" must not offer another tenant's."""
    return [value[:-1], value[:-1] + ("x" if value[-1] != "x" else "y")]


def send(w, op, path, key=None, body=None, headers=None, query=None):
    """Calls op on path with this key and body (a dict: JSON; bytes: raw, with the operation's
    content type)."""
    if query:
        path += "?" + "&".join(f"{k}={v}" for k, v in query.items())
    headers = dict(headers or {})
    if isinstance(body, bytes):
        headers.setdefault("Content-Type", op.body_type() or "application/octet-stream")
        return w.call(op.method, path, key, raw=body, headers=headers)
    return w.call(op.method, path, key, body, headers=headers)


def is_problem(response, status=None):
    return ((status is None or response.status == status) and
            response.headers.get("Content-Type", "").startswith("application/problem+json"))


def leaks(response, traces, sent=()):
    """Which of traces the answer shows, leaving aside what the request itself said."""
    text = response.body.decode(errors="replace")
    for value in sorted(sent, key=len, reverse=True):
        text = text.replace(value, "")
    return sorted(t for t in traces if t and t in text)


# What the server logs when something broke inside it: a handler's exception (a 500, also as the
# local agent hears it), an uncaught one, or its own built-in state found corrupt.
BROKEN_SIGNS = re.compile(r"handler failed|code=internal|\[critical\]|terminate called|what\(\):"
                          r"|alert rules not applied")


def broken_lines(w):
    return [line for line in w.platform.server.output().splitlines() if BROKEN_SIGNS.search(line)]


def assert_healthy(w, after):
    """The server is running, answers /healthz at once, and has logged nothing broken."""
    assert w.platform.server.proc.poll() is None, (
        f"the server died after {after}:\n" + "\n".join(broken_lines(w)[-5:]))
    try:
        health = http(w.platform.url, "GET", "/healthz", timeout=5)
    except OSError as error:
        raise AssertionError(f"the server does not answer after {after}: {error!r}\n" +
                             "\n".join(broken_lines(w)[-5:]))
    assert health.status == 200, (after, health.status, health.body)
    assert not broken_lines(w), (f"the server logged these after {after}:\n" +
                                 "\n".join(broken_lines(w)[-5:]))


def stop_leftover_workloads(data_dir):
    """Kills the processes of instances that a server which stopped answering left running."""
    instances = os.path.join(data_dir, "agent-instances")
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.readlink(f"/proc/{pid}/cwd").startswith(instances):
                os.kill(int(pid), signal.SIGKILL)
        except OSError:
            pass


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("api-security")
    # This suite tests who may call what, not how often: it calls every route many times with
    # one key from one address, past the default limits (test_access.py tests those).
    config = workdir / "server.toml"
    config.write_text("[rate_limits]\nenabled = false\n")
    platform = Platform(str(workdir), extra_args=["--config", str(config)]).start()
    try:
        yield World(platform).build()
    finally:
        try:  # gracefully while it answers; a test says why where it does not
            assert http(platform.url, "GET", "/healthz", timeout=5).status == 200
            platform.shutdown()
        except (AssertionError, OSError):
            platform.server.stop(signal.SIGKILL)
        stop_leftover_workloads(platform.data_dir)


# --- 1. Every operation has a class; the server serves the same document -------------------------

def test_every_operation_of_the_document_is_in_a_class_and_served(world):
    unclassified = [str(op) for op in OPERATIONS if op.cls is None]
    assert not unclassified, (
        "operations in no class (give them a security requirement, a tag and summary the "
        f"classifier reads, or a line in CLASS_TABLE): {unclassified}")
    assert len({op.key for op in OPERATIONS}) == len(OPERATIONS)
    for cls in (PUBLIC, AGENT, TENANT, OPERATOR):
        assert of_class(cls), f"no operation is {cls}: does the classifier still read the document?"

    # Every parameter and body has what fills it here, so a new one fails until it is covered.
    unfilled = [f"{op}: {name}" for op in OPERATIONS for name, kind in param_kinds(op)
                if kind is None]
    assert not unfilled, f"path parameters that PARAM_KINDS does not fill: {unfilled}"
    unknown = [f"{op}: ?{name}" for op in OPERATIONS for name in op.query_params()
               if name not in QUERY_KINDS and name not in PLAIN_QUERY]
    assert not unknown, f"query parameters in neither QUERY_KINDS nor PLAIN_QUERY: {unknown}"
    no_sample = [str(op) for op in OPERATIONS if op.body_type() and op.key not in SAMPLE_BODIES]
    assert not no_sample, f"operations with a body but no SAMPLE_BODIES entry: {no_sample}"
    stale = sorted(set(SAMPLE_BODIES) - {op.key for op in OPERATIONS})
    assert not stale, f"SAMPLE_BODIES entries for operations the document no longer has: {stale}"
    stale = sorted(set(CLASS_TABLE) - {op.key for op in OPERATIONS})
    assert not stale, f"CLASS_TABLE entries for operations the document no longer has: {stale}"

    served = world.call("GET", "/v1/openapi.json")
    assert served.status == 200
    served_ops = {(op.method, op.path) for op in operations_of(served.json())}
    assert served_ops == {op.key for op in OPERATIONS}, (
        "the server's /v1/openapi.json and docs/openapi.json differ: "
        f"only served {sorted(served_ops - {op.key for op in OPERATIONS})}, "
        f"only in docs {sorted({op.key for op in OPERATIONS} - served_ops)}")


def test_public_routes_answer_without_credentials(world):
    for op in of_class(PUBLIC):
        path, _ = world.fill(op, world.values)
        body = world.body(op, world.a_tenant, world.b_tenant) if op.body_type() else None
        response = send(world, op, path, None, body)
        assert response.status < 400, (str(op), response.status, response.body)


# --- 2. Cross-tenant ------------------------------------------------------------------------------

def cross_tenant_routes():
    """Tenant-facing operations whose path names a tenant's object."""
    routes, unknown = [], []
    for op in of_class(TENANT):
        kinds = [kind for _, kind in param_kinds(op)]
        if None in kinds:
            unknown.append(str(op))
        elif any(k in TENANT_KINDS for k in kinds):
            routes.append(op)
        else:
            assert all(k in SHARED_KINDS for k in kinds), (str(op), kinds)
    assert not unknown, f"tenant-facing routes with parameters PARAM_KINDS does not know: {unknown}"
    return routes


def test_another_tenants_objects_are_404_to_every_route_and_stay_unchanged(world):
    w = world
    before = w.snapshot()
    routes = cross_tenant_routes()
    assert len(routes) >= 20, [str(op) for op in routes]
    failures = []
    for role in LESSER_ROLES:
        key = w.keys[role]
        for op in routes:
            path, kinds = w.fill(op, w.values)
            body = w.body(op, w.a_tenant, w.b_tenant) if op.body_type() else None
            query = {k: v for k, v in SAMPLE_QUERIES.get(op.key, {}).items()}
            if "upload" in op.query_params():
                query["upload"] = w.a_values["upload_complete"]
            attempts = [(path, [w.values[k] for k in kinds if k in TENANT_KINDS])]
            # The same object by its name, and one typo away from its id and its name.
            for kind in kinds:
                if kind not in TENANT_KINDS:
                    continue
                variants = near_misses(w.values[kind])
                if kind in w.names:
                    variants += [w.names[kind]] + near_misses(w.names[kind])
                for variant in variants:
                    attempts.append((w.fill(op, {**w.values, kind: variant})[0], [variant]))
            for attempt, sent in attempts:
                response = send(w, op, attempt, key, body, query=query)
                shown = leaks(response, w.b_traces, sent)
                if is_problem(response, 404) and not shown:
                    continue
                if is_problem(response, 403) and not shown:
                    # A role that may not do this to any object (a read-only key): the same 403
                    # for an id that names nothing, so it tells nothing either.
                    unknown = send(w, op, w.fill(op, w.values, bogus=True)[0], key, body,
                                   query=query)
                    if is_problem(unknown, 403) and unknown.json()["code"] == \
                            response.json()["code"]:
                        continue
                failures.append(f"{role}: {op.method} {attempt} -> {response.status} "
                                f"{response.body[:200]!r} shows {shown}")
    assert_healthy(w, "the cross-tenant calls")
    assert not failures, "\n".join(failures)
    assert w.snapshot() == before


def query_probes(w):
    """(operation, its path with A's own objects, the query parameter, B's value) for every
    tenant-facing query parameter that names an object."""
    probes, skipped = [], []
    for op in of_class(TENANT):
        for name in op.query_params():
            kind = QUERY_KINDS.get(name)
            if kind is None:
                continue
            shared = {k: v for k, v in w.values.items() if k not in TENANT_KINDS}
            try:
                path, _ = w.fill(op, {**shared, **w.a_values})
            except KeyError as missing:
                skipped.append(f"{op} ({name}): A has no {missing}")
                continue
            probes.append((op, path, name, w.values[kind]))
            if kind in w.names:  # names work wherever ids do
                probes.append((op, path, name, w.names[kind]))
    return probes, skipped


def test_another_tenants_ids_in_a_query_find_nothing_more_than_an_unknown_id(world):
    w = world
    before = w.snapshot()
    probes, skipped = query_probes(w)
    if w.sandboxed:
        assert not skipped, skipped
    else:  # A has no instance on a node that runs one tenant's processes at a time
        assert all("/v1/instances/{id}/files" in s for s in skipped), skipped
    failures = []
    for role in LESSER_ROLES:
        key = w.keys[role]
        for op, path, name, value in probes:
            base = dict(SAMPLE_QUERIES.get(op.key, {}))
            answers = {}
            for label, v in (("B's", value), ("unknown", bogus_like(value))):
                answers[label] = send(w, op, path, key, query={**base, name: v})
            theirs, unknown = answers["B's"], answers["unknown"]
            described = op.query_params()[name].get("description") or ""
            shown = leaks(theirs, w.b_traces, [value])
            if theirs.status >= 500 or shown:
                failures.append(f"{role}: {op.method} {path}?{name}={value} -> {theirs.status} "
                                f"{theirs.body[:160]!r} shows {shown}")
            elif "others get 404" in described and theirs.status != 404 and not (
                    refused_to(role, op) and is_problem(theirs, 403)):  # the route is not its
                failures.append(f"{role}: {op.method} {path}?{name}={value} -> {theirs.status} "
                                f"{theirs.body[:160]!r}; the document says others get 404")
            elif "ignored for tenants" not in described and (
                    theirs.status, theirs.body) != (unknown.status, unknown.body.replace(
                        bogus_like(value).encode(), value.encode())):
                failures.append(f"{role}: {op} ?{name}={value} (B's) -> {theirs.status} "
                                f"{theirs.body[:160]!r}, an unknown id -> {unknown.status} "
                                f"{unknown.body[:160]!r}")
    assert_healthy(w, "the query probes")
    assert not failures, "\n".join(failures)
    assert w.snapshot() == before


# Fields of a create body that name another tenant's object, by operation.
BODY_REFERENCES = {
    op: [("workdir", "upload_complete", lambda v: v),
         ("volumes", "volume", lambda v: [{"volume_id": v, "mount_path": "/data"}]),
         ("reservation_id", "reservation", lambda v: v)]
    for op in (("POST", "/v1/instances"), ("POST", "/v1/jobs"), ("POST", "/v1/estimate"))
}


def test_another_tenants_ids_in_a_body_find_nothing_more_than_an_unknown_id(world):
    w = world
    bodied = [op for op in of_class(TENANT) if "workdir" in op.body_properties()
              or "volumes" in op.body_properties() or "reservation_id" in op.body_properties()]
    assert {op.key for op in bodied} == set(BODY_REFERENCES), "BODY_REFERENCES is out of date"
    failures = []
    for op in bodied:
        for field, kind, shape in BODY_REFERENCES[op.key]:
            values = [w.values[kind]] + ([w.names[kind]] if kind in w.names else [])
            for value in values:
                base = w.body(op, w.a_tenant, w.b_tenant)
                if field == "reservation_id":
                    base["pricing"] = "reserved"
                theirs = send(w, op, op.path, w.a_key, {**base, field: shape(value)})
                unknown = send(w, op, op.path, w.a_key, {**base, field: shape(bogus_like(value))})
                shown = leaks(theirs, w.b_traces, [value])
                same = (theirs.status, theirs.json().get("code") if is_problem(theirs) else None) \
                    == (unknown.status, unknown.json().get("code") if is_problem(unknown) else None)
                if theirs.status < 400 and op.method == "POST" and op.path != "/v1/estimate":
                    failures.append(f"{op} with B's {field} {value}: created {theirs.body[:160]!r}")
                elif theirs.status >= 500 or shown or not same:
                    failures.append(f"{op} with B's {field} {value} -> {theirs.status} "
                                    f"{theirs.body[:160]!r} (shows {shown}); an unknown one -> "
                                    f"{unknown.status} {unknown.body[:160]!r}")
    assert not failures, "\n".join(failures)


def test_what_a_tenant_lists_shows_nothing_of_another(world):
    w = world
    failures = []
    for op in of_class(TENANT):
        if op.method != "GET" or op.params:
            continue
        response = send(w, op, op.path, w.a_key, query=SAMPLE_QUERIES.get(op.key))
        if op.key == ("GET", "/v1/audit") and response.status == 200:
            # A's audit log records A's own calls, the paths it sent with B's ids included (the
            # cross-tenant probes above): those are A's. Every entry is A's, and shows nothing
            # else of B.
            items = response.json()["items"]
            assert items, "A's audit log is empty: does it record A's calls?"
            strangers = [i for i in items if i["tenant_id"] != w.a_tenant]
            if strangers:
                failures.append(f"{op} -> another tenant's entries: {strangers[:3]}")
            response = Response(response.status, response.headers, json.dumps(
                strip(response.json(), {"target"})).encode())
        shown = leaks(response, w.b_traces)
        if response.status >= 500 or shown:
            failures.append(f"{op} -> {response.status} shows {shown}")
    assert not failures, "\n".join(failures)


def test_a_node_credential_reaches_nothing_of_another_node(world):
    w = world
    before = w.snapshot()
    cred = w.node_credential
    b_instance = w.values["instance"]
    desired = w.call("GET", "/v1/agent/desired?after=0&wait_s=0", cred)
    assert desired.status == 200, desired.body
    assert not leaks(desired, w.b_traces), desired.body
    for value in (w.values["upload_complete"], w.values["upload"]):
        theirs = w.call("GET", f"/v1/agent/upload?id={value}", cred)
        unknown = w.call("GET", f"/v1/agent/upload?id={bogus_like(value)}", cred)
        assert theirs.status == unknown.status == 404, (theirs.status, theirs.body[:200])
    problem(w.call("POST", f"/v1/agent/logs?instance={b_instance}&run=1&offset=0", cred,
                   raw=b"planted by another node\n",
                   headers={"Content-Type": "application/octet-stream"}), 404)
    # A report of another node's instance: ignored, it runs on.
    reported = w.call("POST", "/v1/agent/report", cred, {
        "applied_generation": 0,
        "workloads": [{"instance_id": b_instance, "run": 1, "phase": "exited", "exit_code": 0}]})
    assert reported.status < 500, reported.body
    deadline = time.monotonic() + 1  # the controller's ticks in between act on what it took
    while time.monotonic() < deadline:
        assert w.platform.instance(b_instance, w.b_key)["state"] == "running"
    assert w.snapshot() == before


def test_an_idempotency_key_is_the_callers_own(world):
    """B's Idempotency-Key and body, sent again by A, make A's own object: never B's replayed,
    nor a 409 that tells A the key was used."""
    w = world
    declared = [op for op in of_class(TENANT) if "Idempotency-Key" in
                {p["name"] for p in op.parameters() if p["in"] == "header"}]
    assert {op.key for op in declared} == set(w.idempotent), (
        "an operation honours Idempotency-Key but the world makes no object of B's with it: "
        f"{sorted({op.key for op in declared} - set(w.idempotent))}")
    failures = []
    for op in declared:
        idem, body, b_id = w.idempotent[op.key]
        response = send(w, op, op.path, w.a_key, body, headers={"Idempotency-Key": idem})
        shown = leaks(response, w.b_traces, [v for v in body.values() if isinstance(v, str)])
        made = response.json() if response.status < 300 else {}
        if (response.status >= 300 or shown or response.headers.get("Idempotent-Replayed")
                or made.get("id") == b_id or made.get("tenant_id") != w.a_tenant):
            failures.append(f"{op} with B's Idempotency-Key and body -> {response.status} "
                            f"{response.body[:200]!r} shows {shown}")
        if made.get("id"):  # A's own, made only for this: gone again
            for method, path in (("DELETE", f"{op.path}/{made['id']}"),
                                 ("POST", f"{op.path}/{made['id']}/cancel")):
                if (method, path.replace(made["id"], "{id}")) in {o.key for o in OPERATIONS}:
                    w.call(method, path, w.a_key)
    assert not failures, "\n".join(failures)


# --- 3. Roles -------------------------------------------------------------------------------------

def test_operator_routes_refuse_every_lesser_role_and_anonymous_callers(world):
    w = world
    failures = []
    ops = of_class(OPERATOR)
    for op in ops:
        for role in LESSER_ROLES:
            for bogus in (False, True):  # 403 whether the object exists or not: no oracle
                for values in ({**w.values, "tenant": w.a_tenant}, w.values):
                    path, _ = w.fill(op, values, bogus=bogus)
                    body = w.body(op, w.a_tenant, w.b_tenant) if op.body_type() else None
                    response = send(w, op, path, w.keys[role], body)
                    if not is_problem(response, 403):
                        failures.append(f"{role}: {op.method} {path} -> {response.status} "
                                        f"{response.body[:160]!r}")
        path, _ = w.fill(op, w.values)
        body = w.body(op, w.a_tenant, w.b_tenant) if op.body_type() else None
        for credential in (None, "gpr_" + "x" * 43):
            response = send(w, op, path, credential, body)
            if not is_problem(response, 401):
                failures.append(f"{'no key' if credential is None else 'a bad key'}: {op} -> "
                                f"{response.status} {response.body[:160]!r}")
        # Operators reach it (ids that name nothing, a body with a field no route takes: so
        # nothing changes).
        for role in OPERATOR_ROLES:
            path, _ = w.fill(op, w.values, bogus=True)
            response = send(w, op, path, w.keys[role],
                            {"sec_probe_field": True} if op.body_type() else None)
            if response.status in (401, 403) or response.status >= 500:
                failures.append(f"{role}: {op.method} {path} -> {response.status} "
                                f"{response.body[:160]!r}")
    assert_healthy(w, "the operator routes")
    assert not failures, "\n".join(failures)


def revoked_key(w):
    made = w.ok(w.call("POST", "/v1/api-keys", w.b_key, {"name": "to-revoke"}))
    assert w.call("DELETE", f"/v1/api-keys/{made['id']}", w.b_key).status == 204
    return made["key"]


def test_tenant_facing_routes_need_a_valid_key(world):
    w = world
    before = w.snapshot()
    wait_for(lambda: w.call("GET", "/v1/whoami", w.expiring_key).status == 401, timeout=10,
             what="the expiring key to expire")
    credentials = {"no key": None, "a bad key": "gpr_" + "x" * 43, "a revoked key": revoked_key(w),
                   "an expired key": w.expiring_key, "a node credential": w.node_credential,
                   "a join token": w.join_token, "an empty bearer": ""}
    failures = []
    for op in of_class(TENANT):
        path, _ = w.fill(op, w.values)
        body = w.body(op, w.b_tenant, w.a_tenant) if op.body_type() else None
        query = SAMPLE_QUERIES.get(op.key)
        for label, credential in credentials.items():
            headers = {"Authorization": "Bearer "} if credential == "" else None
            response = send(w, op, path, credential or None, body, headers=headers, query=query)
            if not is_problem(response, 401):
                failures.append(f"{label}: {op.method} {path} -> {response.status} "
                                f"{response.body[:160]!r}")
        response = send(w, op, path, None, body, query=query,
                        headers={"Authorization": "Basic " + "YTpi"})
        if not is_problem(response, 401):
            failures.append(f"Basic auth: {op} -> {response.status} {response.body[:160]!r}")
    assert_healthy(w, "the unauthenticated calls")
    assert not failures, "\n".join(failures)
    assert w.snapshot() == before


def test_agent_routes_take_only_an_agents_credential(world):
    w = world
    failures = []
    for op in of_class(AGENT):
        body = w.body(op, None, None) if op.body_type() else None
        query = {**SAMPLE_QUERIES.get(op.key, {})}
        for name in op.query_params():
            if name in QUERY_KINDS:
                query[name] = bogus_like(w.values[QUERY_KINDS[name]])
        wrong = {"no key": None, **{f"an API key ({role})": k for role, k in w.keys.items()},
                 "a console session": None}
        for label, credential in wrong.items():
            headers = with_cookie(w.b_cookie) if label == "a console session" else None
            response = send(w, op, op.path, credential, body, headers=headers, query=query)
            if not is_problem(response, 401):
                failures.append(f"{label}: {op} -> {response.status} {response.body[:160]!r}")
        other = w.node_credential if op.path == "/v1/agent/register" else w.join_token
        response = send(w, op, op.path, other, body, query=query)
        if not is_problem(response, 401):
            failures.append(f"the other agent credential: {op} -> {response.status} "
                            f"{response.body[:160]!r}")
    assert not failures, "\n".join(failures)


def test_a_console_session_changes_nothing_without_its_csrf_token_and_origin(world):
    w = world
    before = w.snapshot()
    failures = []
    for op in of_class(TENANT, OPERATOR):
        if op.method in ("GET", "HEAD") or is_proxied(op):
            continue  # reads need no token; the services proxy checks Origin (test_jupyter.py)
        path, _ = w.fill(op, w.values)
        body = w.body(op, w.b_tenant, w.a_tenant) if op.body_type() else None
        for label, headers in (
                ("no CSRF token", with_cookie(w.b_cookie)),
                ("a wrong CSRF token", with_cookie(w.b_cookie, "0" * 64)),
                ("another origin", with_cookie(w.b_cookie, w.b_session["csrf_token"],
                                               Origin="http://evil.example"))):
            response = send(w, op, path, None, body, headers=headers,
                            query=SAMPLE_QUERIES.get(op.key))
            if not is_problem(response, 403):
                failures.append(f"{label}: {op.method} {path} -> {response.status} "
                                f"{response.body[:160]!r}")
    assert not failures, "\n".join(failures)
    assert w.snapshot() == before


def test_keys_mint_and_revoke_only_the_roles_their_role_may(world):
    """A key mints and revokes keys of roles at or below its own; members and read-only keys
    none. An alias mints the role it reads as."""
    w = world
    failures = []
    for role, key in w.keys.items():
        seen = w.ok(w.call("GET", "/v1/whoami", key))["role"]
        if seen != role:
            failures.append(f"a {role} key reports {seen}")
    seen = w.ok(w.call("GET", "/v1/whoami", w.a_key))["role"]  # made as "tenant"
    if seen != ALIASES["tenant"]:
        failures.append(f"a key made as tenant reports {seen}")
    for role in ROLES:
        key = w.keys[role]
        for target in (*ROLES, *ALIASES):
            canonical = ALIASES.get(target, target)
            body = {"role": target, "name": f"minted-by-{role}"}
            if not ROLES[canonical].operator:
                body["tenant_id"] = w.a_tenant
            made = w.call("POST", "/v1/api-keys", key, body)
            allowed = canonical in mints(role)
            if allowed and made.status == 201:
                if made.json()["role"] != canonical:
                    failures.append(f"{role} mints {target}: a key of {made.json()['role']}")
                w.ok(w.call("DELETE", f"/v1/api-keys/{made.json()['id']}", w.platform.admin_key),
                     204)
            elif allowed or not is_problem(made, 403):
                failures.append(f"{role} mints {target}: {made.status} {made.body[:160]!r}")
            if target in ALIASES:
                continue  # revoking: the role it reads as is revoked above
            # Revoking a key of that role (one the admin made).
            victim = w.ok(w.call("POST", "/v1/api-keys", w.platform.admin_key, body))
            revoked = w.call("DELETE", f"/v1/api-keys/{victim['id']}", key)
            if allowed != (revoked.status == 204) or (not allowed and revoked.status not in (403,
                                                                                             404)):
                failures.append(f"{role} revokes {target}: {revoked.status} {revoked.body[:160]!r}")
            if revoked.status != 204:
                w.ok(w.call("DELETE", f"/v1/api-keys/{victim['id']}", w.platform.admin_key), 204)
            elif w.call("GET", "/v1/whoami", victim["key"]).status != 401:
                failures.append(f"{role} revoked a {target} key that still works")
    assert not failures, "\n".join(failures)


def test_each_tenant_role_does_to_its_own_tenants_objects_only_what_it_may(world):
    """With B's own keys of every tenant role, by key and by console session (with its CSRF
    token), on B's objects: read-only keys are 403 on every route that changes something, members
    and read-only keys on the keys and the audit log (reading too), whether the object exists or
    not; what a role may call, it reaches (ids that name nothing and bodies no route takes, so
    nothing changes). B's objects are unchanged after."""
    w = world
    before = w.snapshot()
    admin_only = {op.key for op in of_class(TENANT) if any(under(op, a) for a in ADMIN_AREAS)}
    assert {("GET", "/v1/api-keys"), ("POST", "/v1/api-keys"), ("DELETE", "/v1/api-keys/{id}"),
            ("GET", "/v1/audit")} <= admin_only, admin_only
    failures, refused = [], {}
    for role in LESSER_ROLES:
        session, cookie, _ = sign_in(w.platform, w.own_keys[role])
        callers = {"key": (w.own_keys[role], None),
                   "console session": (None, with_cookie(cookie, session["csrf_token"]))}
        refused[role] = []
        for op in of_class(TENANT):
            query = SAMPLE_QUERIES.get(op.key)
            for via, (key, headers) in callers.items():
                if via == "console session" and (is_proxied(op) or op.path == "/v1/session"):
                    continue  # a service by a ticket (test_jupyter.py); signing out: below
                if refused_to(role, op):
                    refused[role].append(op.key)
                    for bogus in (False, True):  # the same 403 for B's objects as for no object
                        path, _ = w.fill(op, w.values, bogus=bogus)
                        body = w.body(op, w.b_tenant, w.a_tenant) if op.body_type() else None
                        response = send(w, op, path, key, body, headers=headers, query=query)
                        if not is_problem(response, 403) or response.json()["code"] != "forbidden":
                            failures.append(f"{role} ({via}): {op.method} {path} -> "
                                            f"{response.status} {response.body[:160]!r}")
                    continue
                if changes(op):  # on no object, or with a body no route takes: changes nothing
                    path, _ = w.fill(op, w.values, bogus=True)
                    body = {"sec_probe_field": True} if op.body_type() else None
                else:
                    path, _ = w.fill(op, w.values)
                    body = w.body(op, w.b_tenant, w.a_tenant) if op.body_type() else None
                response = send(w, op, path, key, body, headers=headers, query=query)
                if response.status in (401, 403) or (response.status >= 500 and not is_proxied(op)):
                    failures.append(f"{role} ({via}) may: {op.method} {path} -> "
                                    f"{response.status} {response.body[:160]!r}")
        # Signing out is no change a read-only key is refused.
        signed_out = w.call("DELETE", "/v1/session", headers=callers["console session"][1])
        if signed_out.status != 204:
            failures.append(f"{role} signs out: {signed_out.status} {signed_out.body[:160]!r}")
    assert_healthy(w, "the tenant roles' calls")
    assert not failures, "\n".join(failures)
    assert w.snapshot() == before
    # What each role was refused is what docs/api.md says.
    writes = {op.key for op in of_class(TENANT) if changes(op) and op.path not in OPEN_ROUTES}
    assert not refused["tenant-admin"], refused["tenant-admin"]
    assert set(refused["tenant-member"]) == admin_only
    assert set(refused["read-only"]) == admin_only | writes


def test_a_key_scoped_to_reading_instances_reaches_nothing_else(world):
    """B's tenant admin key with scopes ["instances:read"]: its GETs under /v1/instances answer,
    every other keyed route (another area, or one that changes something, instances' included;
    the services proxy too) is 403 for B's objects and for no object alike."""
    w = world
    before = w.snapshot()
    key = w.scoped_key
    whoami = w.ok(w.call("GET", "/v1/whoami", key))
    assert (whoami["role"], whoami["scopes"]) == ("tenant-admin", ["instances:read"]), whoami
    failures, reached = [], []
    for op in of_class(TENANT):
        if op.path in OPEN_ROUTES:
            continue  # every key's (the catalog, who am I, the console session)
        query = SAMPLE_QUERIES.get(op.key)
        if under(op, "/v1/instances") and not changes(op):
            path, _ = w.fill(op, w.values)
            response = send(w, op, path, key, query=query)
            reached.append(op.key)
            if response.status not in (200, 404):
                failures.append(f"may read: {op.method} {path} -> {response.status} "
                                f"{response.body[:160]!r}")
            continue
        for bogus in (False, True):
            path, _ = w.fill(op, w.values, bogus=bogus)
            body = w.body(op, w.b_tenant, w.a_tenant) if op.body_type() else None
            response = send(w, op, path, key, body, query=query)
            if not is_problem(response, 403):
                failures.append(f"{op.method} {path} -> {response.status} "
                                f"{response.body[:160]!r}")
    assert {("GET", "/v1/instances"), ("GET", "/v1/instances/{id}")} <= set(reached), reached
    # Its scopes do not reach the keys: it makes none, a key of wider scopes least of all.
    for scopes in (["*"], ["instances:read"]):
        made = w.call("POST", "/v1/api-keys", key, {"name": "scoped-child", "scopes": scopes})
        if not is_problem(made, 403):
            failures.append(f"mints {scopes}: {made.status} {made.body[:160]!r}")
    assert_healthy(w, "the scoped key's calls")
    assert not failures, "\n".join(failures)
    assert w.snapshot() == before


def test_no_key_grants_more_scopes_or_a_longer_life_than_its_maker(world):
    """A's key that may only manage keys, until tomorrow: it mints no wider scopes, its keys live
    no longer than it; an expiry in the past is refused; an expired key authenticates nothing."""
    w = world
    key, limit = w.narrow_key, w.narrow_expires_at
    failures, made_ids = [], []
    for scopes in (["*"], ["*:read"], ["instances:read"], ["keys:write", "jobs:read"]):
        made = w.call("POST", "/v1/api-keys", key, {"name": "wider", "scopes": scopes})
        if not is_problem(made, 403):
            failures.append(f"scopes {scopes}: {made.status} {made.body[:160]!r}")
            if made.status == 201:
                made_ids.append(made.json()["id"])
    for body in ({"scopes": ["keys:read"]}, {"scopes": ["keys:write"], "role": "read-only"},
                 {"scopes": ["keys:write"], "expires_at": "2100-01-01T00:00:00.000Z"}):
        made = w.call("POST", "/v1/api-keys", key, {"name": "narrower", **body})
        if made.status != 201:
            failures.append(f"{body}: {made.status} {made.body[:160]!r}")
            continue
        child = made.json()
        made_ids.append(child["id"])
        if child["scopes"] != body["scopes"] or child.get("expires_at") is None or \
                child["expires_at"] > limit:
            failures.append(f"{body}: made {child} (its maker's expires_at: {limit})")
    past = w.call("POST", "/v1/api-keys", key, {"name": "past", "scopes": ["keys:read"],
                                                "expires_at": "2001-02-03T04:05:06.000Z"})
    if not is_problem(past, 400) or past.json()["code"] != "invalid_expiry":
        failures.append(f"expires_at in the past: {past.status} {past.body[:160]!r}")
    for made_id in made_ids:
        w.call("DELETE", f"/v1/api-keys/{made_id}", w.platform.admin_key)
    # The key that expired seconds after the world was built.
    wait_for(lambda: w.call("GET", "/v1/whoami", w.expiring_key).status == 401, timeout=10,
             what="the expiring key to expire")
    for method, path in (("GET", "/v1/instances"), ("POST", "/v1/volumes")):
        response = w.call(method, path, w.expiring_key,
                          {"name": "after-expiry", "size_gb": 1} if method == "POST" else None)
        if not is_problem(response, 401):
            failures.append(f"expired: {method} {path} -> {response.status}")
    assert not failures, "\n".join(failures)


def test_a_key_minted_without_scopes_gets_its_makers(world):
    w = world
    made = w.call("POST", "/v1/api-keys", w.narrow_key, {"name": "default-scopes"})
    if made.status == 201:
        w.call("DELETE", f"/v1/api-keys/{made.json()['id']}", w.platform.admin_key)
    assert made.status == 201, (made.status, made.body)
    assert made.json()["scopes"] == ["keys:write"], made.json()


# --- 4. Privileged fields in create bodies -------------------------------------------------------

# Fields a caller must not set: name -> the value sent (from the world, the caller's tenant, the
# other tenant).
PRIVILEGED_FIELDS = {
    "tenant_id": lambda w, me, other: other,
    "role": lambda w, me, other: w.admin_role,
    "id": lambda w, me, other: "x-chosen-by-caller",
    "created_at": lambda w, me, other: "2001-02-03T04:05:06.000Z",
    "state": lambda w, me, other: "ended",
    "node_id": lambda w, me, other: w.fake_node,
    "balance_micros": lambda w, me, other: 10 ** 12,
    "amount_micros": lambda w, me, other: 10 ** 12,
    "price_micros": lambda w, me, other: 0,
    "price_per_gpu_hour_micros": lambda w, me, other: 0,
    "paid_micros": lambda w, me, other: 0,
    "total_micros": lambda w, me, other: 0,
    "currency": lambda w, me, other: "USD",
    "session_of": lambda w, me, other: w.values["api_key"],
    "key_id": lambda w, me, other: w.values["api_key"],
    "scopes": lambda w, me, other: ["*"],
    "expires_at": lambda w, me, other: "2100-01-01T00:00:00.000Z",
    "key": lambda w, me, other: "gpr_chosen-by-the-caller-0000000000000000000000",
    "token": lambda w, me, other: "gjt_chosen-by-the-caller-0000000000000000000000",
    "credential": lambda w, me, other: "gnc_chosen-by-the-caller-0000000000000000000000",
    "secret_hash": lambda w, me, other: "0" * 64,
    "registered_from": lambda w, me, other: "203.0.113.9",
    "builtin": lambda w, me, other: True,
    "version": lambda w, me, other: 999,
    "set_at": lambda w, me, other: "2001-02-03T04:05:06.000Z",
}
# Agents' bodies are read leniently (an older agent's fields): each accepted one registers a node,
# so only the fields that could take over a node or a tenant's object are sent there.
AGENT_FIELDS = ("id", "node_id", "tenant_id", "state", "credential", "registered_from")


def privileged_caller(w, op):
    """(credential, the caller's tenant, the other tenant, path) for sending op's body."""
    if op.cls == PUBLIC:  # signs in with A's key
        return None, w.a_tenant, w.b_tenant, op.path
    if op.cls == AGENT:
        credential = w.join_token if op.path == "/v1/agent/register" else w.node_credential
        return credential, None, w.b_tenant, op.path
    if op.cls == OPERATOR:
        path, _ = w.fill(op, {**w.values, "tenant": w.a_tenant})
        return w.keys[LEAST_OPERATOR], w.operator_tenant, w.b_tenant, path
    if op.params:  # on B's own object, naming A
        return w.b_key, w.b_tenant, w.a_tenant, w.fill(op, w.values)[0]
    if op.key == ("POST", "/v1/api-keys"):  # a key's own scopes and expiry bound its keys'
        return w.narrow_key, w.a_tenant, w.b_tenant, op.path
    return w.a_key, w.a_tenant, w.b_tenant, op.path


# Where the privileged caller is narrowed, what its body says to stay within its bounds.
PRIVILEGED_BASES = {("POST", "/v1/api-keys"): {"scopes": ["keys:write"]}}


def read_back(w, op, credential, made):
    """The object op made, read again by its maker (None where no route reads it)."""
    known = {o.key for o in OPERATIONS}
    object_id = made.get("id")
    if object_id and ("GET", op.path + "/{id}") in known:
        response = w.call("GET", f"{op.path}/{object_id}", credential)
        return response.json() if response.status == 200 else None
    if object_id and ("GET", op.path) in known:
        response = w.call("GET", op.path, credential)
        if response.status == 200:
            return next((i for i in response.json().get("items", []) if i.get("id") == object_id),
                        None)
    if op.path == "/v1/agent/register":
        return w.ok(w.call("GET", f"/v1/nodes/{made['node_id']}", w.platform.admin_key))
    return None


def applied(field, value, obj):
    return isinstance(obj, dict) and field in obj and obj[field] == value


def clean_up(w, op, made):
    object_id = made.get("id") if isinstance(made, dict) else None
    known = {o.key for o in OPERATIONS}
    if object_id and ("DELETE", op.path + "/{id}") in known:
        w.call("DELETE", f"{op.path}/{object_id}", w.platform.admin_key)


def test_privileged_fields_in_create_bodies_are_refused_or_ignored(world):
    w = world
    admin = w.platform.admin_key
    dev_before = strip(w.ok(w.call("GET", f"/v1/nodes/{w.dev_node['id']}", admin)),
                       {"telemetry", "last_heartbeat", "clock_skew_ms", "free_gpus", "gpus",
                        "instance_ids"})
    failures, accepted = [], []
    for op in OPERATIONS:
        if op.body_type() != "application/json":
            continue
        credential, me, other, path = privileged_caller(w, op)
        legit = op.body_properties()
        for field, make in PRIVILEGED_FIELDS.items():
            if op.cls == AGENT and field not in AGENT_FIELDS:
                continue
            if field in legit and op.cls == OPERATOR:
                continue  # the operator's to set: not privileged for it
            value = make(w, me, other)
            body = {**w.body(op, me, other), **PRIVILEGED_BASES.get(op.key, {}), field: value}
            response = send(w, op, path, credential, body)
            if response.status >= 500:
                failures.append(f"{op} +{field}: {response.status} {response.body[:200]!r}")
                continue
            if response.status >= 400:
                if not is_problem(response):
                    failures.append(f"{op} +{field}: {response.status} not problem+json")
                continue
            accepted.append(f"{op} +{field}")
            made = response.json() if response.headers.get(
                "Content-Type", "").startswith("application/json") else None
            objects = [made]
            if isinstance(made, dict):
                objects.append(read_back(w, op, credential, made))
            if op.key == ("POST", "/v1/session"):
                cookie = re.match(r"gpurent_console=([^;]+);", response.headers["Set-Cookie"])
                session = w.ok(http(w.platform.url, "GET", "/v1/session",
                                    headers=with_cookie(cookie.group(1))))
                objects.append(session)
                if (session["tenant_id"], session["role"]) != (me, w.a_role):
                    failures.append(f"{op} +{field}: a session of {session}")
            for obj in objects:
                if applied(field, value, obj):
                    failures.append(f"{op} +{field}={value!r}: applied: {json.dumps(obj)[:300]}")
            if isinstance(made, dict):
                clean_up(w, op, made)

    # Nothing reached a balance, the platform's node, or another tenant's objects.
    tenants = w.ok(w.call("GET", "/v1/tenants", admin))["items"]
    rich = [t for t in tenants if t["balance_micros"] >= 10 ** 12]
    assert not rich, rich
    dev_after = strip(w.ok(w.call("GET", f"/v1/nodes/{w.dev_node['id']}", admin)),
                      {"telemetry", "last_heartbeat", "clock_skew_ms", "free_gpus", "gpus",
                       "instance_ids"})
    assert dev_after == dev_before
    assert w.platform.instance(w.values["instance"], w.b_key)["state"] == "running"
    assert_healthy(w, "the privileged fields")
    assert not failures, "\n".join(failures) + f"\n(accepted and ignored: {accepted})"


# --- 5. Oversized, deeply nested, malformed and mistyped bodies ----------------------------------

NESTED = [b"[" * 100_000, b'{"a":' * 100_000, b"[" * 50_000 + b"]" * 50_000,
          b'{"name": ' + b"[" * 99_000 + b"]" * 99_000 + b"}"]
MALFORMED = [b"{not json", b'{"a": 1,}', b"\xff\xfe\x00{", b'{"a": "\x01"}', b"null", b"[]",
             b'"text"', b"42", b'{"a": 1}{"b": 2}', b'{"a":', b"{" * 3 + b"}" * 2]
WRONG_TYPES = [
    ("application/x-www-form-urlencoded", b"name=x&role=admin&tenant_id=t-1"),
    ("multipart/form-data; boundary=sec",
     b'--sec\r\nContent-Disposition: form-data; name="name"\r\n\r\nx\r\n--sec--\r\n'),
    ("application/xml", b"<name>x</name>"),
    ("text/plain", b"name: x"),
]


def body_caller(w, op):
    """(credential, path) reaching op's body parser: its own caller, on B's objects."""
    if op.cls == PUBLIC:
        return None, op.path
    if op.cls == AGENT:
        return (w.join_token if op.path == "/v1/agent/register" else w.node_credential), op.path
    if op.cls == OPERATOR:
        return w.keys[LEAST_OPERATOR], w.fill(op, {**w.values, "tenant": w.a_tenant})[0]
    return w.b_key, w.fill(op, w.values)[0]


def test_bad_json_bodies_are_400_problems_and_the_server_stays_up(world):
    w = world
    before = w.snapshot()
    failures = []
    for op in OPERATIONS:
        if op.body_type() != "application/json":
            continue
        credential, path = body_caller(w, op)
        query = SAMPLE_QUERIES.get(op.key)
        bodies = [("nested", raw, "application/json") for raw in NESTED]
        bodies += [("malformed", raw, "application/json") for raw in MALFORMED]
        if op.body_required():
            bodies.append(("empty", b"", "application/json"))
        bodies += [("wrong type", raw, content_type) for content_type, raw in WRONG_TYPES]
        for label, raw, content_type in bodies:
            response = send(w, op, path, credential, raw, headers={"Content-Type": content_type},
                            query=query)
            if not (400 <= response.status < 500 and is_problem(response)):
                failures.append(f"{label} {raw[:24]!r} ({content_type}): {op} -> "
                                f"{response.status} {response.body[:160]!r}")
        assert_healthy(w, f"bad bodies to {op}")
    assert not failures, "\n".join(failures)
    assert w.snapshot() == before


def raw_request(w, method, path, headers, chunks=None):
    """A request written by hand (a lying Content-Length, a chunked body): (status, headers,
    body), or (None, error) when the server cut the connection without answering."""
    connection = http_client.HTTPConnection("127.0.0.1", w.platform.port, timeout=10)
    try:
        connection.putrequest(method, path, skip_accept_encoding=True)
        for name, value in headers.items():
            connection.putheader(name, value)
        connection.endheaders()
        try:
            for chunk in chunks or ():
                connection.send(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            if chunks is not None:
                connection.send(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered and closed before the rest: read its answer
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    except (OSError, http_client.HTTPException) as error:  # cut off, or no answer in time
        return None, {}, repr(error).encode()
    finally:
        connection.close()


def oversized_calls(w):
    """(operation, path, credential, content type, the status expected) for every route the body
    limit applies to: 413 where the route takes a body; where it takes none, any 4xx."""
    for op in OPERATIONS:
        if is_proxied(op):
            continue  # bodies to an instance's services stream through, unbounded (docs/api.md)
        credential, path = body_caller(w, op)
        if not op.body_type():
            # Ids that name nothing: were the body ignored, no object of B's could change.
            path, _ = w.fill(op, w.values, bogus=True)
        yield op, path, credential, op.body_type() or "application/json", (
            413 if op.body_type() else None)


def is_problem_answer(status, headers, expected):
    """A problem+json answer with the status expected (None: any 4xx)."""
    return (status is not None and (status == expected if expected else 400 <= status < 500)
            and headers.get("Content-Type", "").startswith("application/problem+json"))


def test_bodies_over_the_limit_are_413_problems_to_every_route(world):
    w = world
    before = w.snapshot()
    failures = []
    big = b'{"name": "' + b"x" * MAX_BODY_BYTES + b'"}'
    for op, path, credential, content_type, expected in oversized_calls(w):
        response = send(w, op, path, credential, big, headers={"Content-Type": content_type})
        if not is_problem_answer(response.status, response.headers, expected):
            failures.append(f"{len(big)} bytes: {op} -> {response.status} {response.body[:160]!r}")
        auth = {"Authorization": f"Bearer {credential}"} if credential else {}
        status, headers, body = raw_request(w, op.method, path, {
            **auth, "Content-Type": content_type, "Content-Length": str(1 << 40)})
        if not is_problem_answer(status, headers, expected):
            failures.append(f"Content-Length 2^40: {op} -> {status} {body[:160]!r}")
        assert_healthy(w, f"oversized bodies to {op}")
    assert not failures, "\n".join(failures)
    assert w.snapshot() == before


def test_chunked_bodies_over_the_limit_are_413_problems_to_every_route(world):
    """Last: a body without a length is counted as it comes, and refused past 1 MiB."""
    w = world
    before = w.snapshot()
    failures = []
    for op, path, credential, content_type, expected in oversized_calls(w):
        auth = {"Authorization": f"Bearer {credential}"} if credential else {}
        status, headers, body = raw_request(
            w, op.method, path, {**auth, "Content-Type": content_type,
                                 "Transfer-Encoding": "chunked"},
            chunks=[b"x" * (256 << 10)] * 5)
        if not is_problem_answer(status, headers, expected):
            failures.append(f"chunked 1.25 MiB: {op} -> {status} {body[:160]!r}")
        assert_healthy(w, f"a chunked body of 1.25 MiB to {op}")
    assert not failures, "\n".join(failures)
    assert w.snapshot() == before
