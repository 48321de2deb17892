// The dashboard: polls /ui/state every second and redraws the workers and
// their task cards. Every text from the cluster goes through textContent,
// never HTML. Actions call the REST API on the same origin, so the browser
// sends the credentials it already holds when REST needs basic auth.
"use strict";

const POLL_MS = 1000;
let view = null;
let open = null; // {connector, task} whose details the dialog shows

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children) if (c != null) e.append(c);
  return e;
}

function fmtRate(t) {
  if (!t.measured) return "—";
  const r = t.records_per_sec;
  return r >= 100 ? Math.round(r).toLocaleString() : r.toFixed(1);
}
function fmtInt(t, n) { return t.measured && n >= 0 ? n.toLocaleString() : "—"; }

// Connector-level actions, as Kafka Connect's REST API names them.
const connectorActions = [
  { label: "Pause", method: "PUT", path: c => `/connectors/${enc(c)}/pause` },
  { label: "Resume", method: "PUT", path: c => `/connectors/${enc(c)}/resume` },
  { label: "Restart", method: "POST", path: c => `/connectors/${enc(c)}/restart?includeTasks=true&onlyFailed=false` },
  { label: "Stop", method: "PUT", path: c => `/connectors/${enc(c)}/stop`, danger: true },
];
function enc(s) { return encodeURIComponent(s); }

async function act(label, method, path) {
  try {
    const res = await fetch(path, { method, credentials: "same-origin", headers: { "Accept": "application/json" } });
    if (!res.ok) {
      let msg = `${res.status}`;
      try { msg += ": " + (await res.json()).message; } catch (_) { /* no JSON body */ }
      showBanner(`${label} failed (${msg})`);
      return;
    }
    showBanner(null);
    poll();
  } catch (e) {
    showBanner(`${label} failed: ${e.message}`);
  }
}

function actionButtons(connector, task) {
  const box = el("div", { class: "actions" });
  for (const a of connectorActions) {
    box.append(el("button", { type: "button", class: "act" + (a.danger ? " danger" : ""),
      "aria-label": `${a.label} connector ${connector}`, "data-key": `${a.label}:${connector}:${task}`,
      onclick: () => act(`${a.label} ${connector}`, a.method, a.path(connector)) }, a.label));
  }
  if (task != null) {
    box.append(el("button", { type: "button", class: "act", "aria-label": `Restart task ${task} of ${connector}`,
      "data-key": `restart-task:${connector}:${task}`,
      onclick: () => act(`Restart ${connector}/${task}`, "POST", `/connectors/${enc(connector)}/tasks/${task}/restart`) },
      `Restart task ${task}`));
  }
  return box;
}

function showBanner(msg) {
  const b = document.getElementById("banner");
  b.hidden = !msg;
  b.textContent = msg || "";
}

// render redraws what changed. Controls are rebuilt only when the shape of
// the cluster changed (connectors, placement, states): a button replaced
// between a press and its release would lose the click. Otherwise only the
// numbers change, inside the cards. When controls are rebuilt, the one that
// had the keyboard focus gets it back (by its data-key).
function render() {
  const focused = document.activeElement && document.activeElement.dataset ? document.activeElement.dataset.key : null;
  redraw();
  if (focused) {
    const again = Array.from(document.querySelectorAll("[data-key]")).find(e => e.dataset.key === focused);
    if (again) again.focus();
  }
}

function redraw() {
  const v = view;
  const tasks = v.connectors.reduce((n, c) => n + c.tasks.length, 0);
  document.getElementById("meta").textContent =
    `${v.workers.filter(w => w.alive).length} workers · ${v.connectors.length} connectors · ${tasks} tasks · ` +
    `served by ${v.served_by} · ${new Date(v.time).toLocaleTimeString()}`;

  const connectorsShape = JSON.stringify(v.connectors.map(c => [c.name, c.state, c.type, c.tasks.length]));
  if (connectorsShape !== shapes.connectors) {
    shapes.connectors = connectorsShape;
    drawConnectors(v);
  }

  const byWorker = new Map(v.workers.map(w => [w.worker_id, []]));
  const unassigned = [];
  for (const c of v.connectors) {
    for (const t of c.tasks) {
      (byWorker.get(t.worker_id) || unassigned).push({ c, t });
    }
  }
  const workersShape = JSON.stringify([v.workers, v.connectors.map(c => c.tasks.map(t => [c.name, t.id, t.state, t.worker_id]))]);
  if (workersShape !== shapes.workers) {
    shapes.workers = workersShape;
    const columns = v.workers.map(w => column(w, byWorker.get(w.worker_id)));
    if (unassigned.length) columns.push(column({ worker_id: "unassigned", alive: false, unassigned: true }, unassigned));
    document.getElementById("workers").replaceChildren(...columns);
  } else {
    for (const c of v.connectors) {
      for (const t of c.tasks) {
        const card = document.querySelector(`button.task[data-key="${CSS.escape(`task:${c.name}/${t.id}`)}"]`);
        if (card) card.querySelector(".nums").replaceChildren(...nums(t));
      }
    }
  }
  if (open) fillDetails();
}

// shapes are what the last redraw built its controls from.
const shapes = { connectors: null, workers: null };

function drawConnectors(v) {
  const cl = document.getElementById("connectors");
  cl.replaceChildren(...v.connectors.map(c => el("li", { class: "connector", "data-connector": c.name },
    el("span", { class: "name", text: c.name }),
    el("span", { class: "state", "data-state": c.state, text: c.state }),
    el("span", { class: "gen", text: `${c.type} · ${c.tasks.length} task${c.tasks.length === 1 ? "" : "s"}` }),
    actionButtons(c.name, null))));
  if (!v.connectors.length) cl.replaceChildren(el("li", { class: "empty", text: "No connectors yet." }));
}

function nums(t) {
  return [
    el("span", {}, el("b", { text: fmtRate(t) }), " rec/s"),
    el("span", {}, "lag ", el("b", { text: fmtInt(t, t.lag) })),
    el("span", {}, "total ", el("b", { text: fmtInt(t, t.total) })),
  ];
}

function column(w, items) {
  const head = el("header", {},
    el("h3", { text: w.worker_id }),
    w.leader ? el("span", { class: "tag leader", text: "leader" }) : null,
    w.unassigned ? null : el("span", { class: "tag " + (w.alive ? "alive" : "gone"), text: w.alive ? "alive" : "gone" }),
    w.alive ? el("span", { class: "gen", text: `gen ${w.generation}` }) : null);
  const list = el("ul", { class: "tasks", "aria-label": `Tasks on ${w.worker_id}` });
  items.sort((a, b) => a.c.name.localeCompare(b.c.name) || a.t.id - b.t.id);
  for (const { c, t } of items) {
    list.append(el("li", {}, el("button", {
      type: "button", class: "task", "data-state": t.state, "data-task": `${c.name}/${t.id}`, "data-key": `task:${c.name}/${t.id}`,
      "data-worker": w.worker_id, "aria-label": `${c.name} task ${t.id}, ${t.state}; details`,
      onclick: () => showDetails(c.name, t.id),
    },
      el("span", { class: "id", text: `${c.name} #${t.id}` }),
      el("span", { class: "state", "data-state": t.state, text: t.state }),
      el("span", { class: "nums" }, ...nums(t)))));
  }
  const section = el("section", { class: "worker" + (w.alive ? "" : " dead"), "data-worker": w.worker_id,
    "aria-label": `Worker ${w.worker_id}` }, head, list);
  if (!items.length) section.append(el("p", { class: "empty", text: "No tasks." }));
  return section;
}

function showDetails(connector, task) {
  open = { connector, task };
  fillDetails();
  // Built once per opening, not on every redraw (see render).
  document.getElementById("details-actions-title").textContent = `Connector ${connector}, task ${task}`;
  document.getElementById("details-actions").replaceChildren(actionButtons(connector, task));
  const d = document.getElementById("details");
  if (!d.open) d.showModal();
}

function fillDetails() {
  const c = view.connectors.find(c => c.name === open.connector);
  const t = c && c.tasks.find(t => t.id === open.task);
  document.getElementById("details-title").textContent = `${open.connector} task ${open.task}`;
  const facts = [];
  if (!c || !t) {
    facts.push(["state", "gone: the connector or task no longer exists"]);
  } else {
    facts.push(["task state", t.state], ["worker", t.worker_id || "—"], ["connector state", c.state],
      ["type", c.type], ["records/s", fmtRate(t)], ["lag", fmtInt(t, t.lag)], ["total", fmtInt(t, t.total)]);
  }
  document.getElementById("details-facts").replaceChildren(...facts.flatMap(([k, v]) =>
    [el("dt", { text: k }), el("dd", { text: String(v) })]));
  const trace = (t && t.trace) || (c && c.trace) || "";
  document.getElementById("details-trace").textContent = trace || "No error.";
}

document.getElementById("details").addEventListener("close", () => { open = null; });

async function poll() {
  try {
    const res = await fetch("/ui/state", { credentials: "same-origin", cache: "no-store" });
    if (!res.ok) throw new Error(`GET /ui/state answered ${res.status}`);
    view = await res.json();
    render();
    document.body.dataset.loaded = "true";
  } catch (e) {
    document.getElementById("meta").textContent = `disconnected: ${e.message}; retrying`;
  }
}

poll();
setInterval(poll, POLL_MS);
