// The console's one script (its CSP runs no other, and no inline script). Same origin only.
// - The token: a page opens as a shell holding no data. The token a link brought (`?token=`) is kept in this
//   origin's own storage (scheme, host and port: no other service on the machine reads it, where a cookie
//   would be sent to every port) and taken out of the address bar and the history entry; the page's content,
//   its live sections and the event stream are fetched with it in the X-Console-Token header.
// - Live sections: the server's event stream names the topics that changed; each section of the page whose
//   topics it names is fetched again and put in place (the server escaped every text a run wrote).
// - Notifications: what the stream says a person wants to know (an agent waits, a run ended) is shown on
//   the page and, once the person allowed it, as a browser notification.
// - Approvals: one click approves, denies or approves always (the CSRF token from the page's meta tag).
// - The change: a comment on any line, and "send back" with the comments and a note.
"use strict";
(function () {
  const KEY = "runtime-console-token";

  function takeToken() {
    const url = new URL(window.location.href);
    const given = url.searchParams.get("token");
    if (given !== null) {
      try { window.localStorage.setItem(KEY, given); } catch (e) { /* storage refused: this page alone */ }
      url.searchParams.delete("token");
      window.history.replaceState(null, "", url.pathname + url.search + url.hash);
      return given;
    }
    try { return window.localStorage.getItem(KEY) || ""; } catch (e) { return ""; }
  }
  const token = takeToken();
  let csrf = "";
  window.consoleUpdates = 0;  // how many live updates this page took (the benchmark reads it)

  function get(url) {
    return fetch(url, { credentials: "omit", cache: "no-store", headers: { "X-Console-Token": token } });
  }

  async function open() {
    const opening = document.getElementById("opening");
    if (!opening) { return; }
    let answer;
    try {
      answer = await get(window.location.pathname + window.location.search);
    } catch (e) {
      opening.textContent = "the console does not answer: is `runtime console` still running?";
      return;
    }
    const body = await answer.text();
    if (!answer.ok || !(answer.headers.get("content-type") || "").startsWith("text/html")) {
      opening.replaceChildren();
      const said = document.createElement("pre");
      said.textContent = body.trim();
      opening.appendChild(said);
      return;
    }
    // The page as the server rendered it (every text a run wrote escaped there); a parsed document runs no
    // script, and the CSP runs none but this file.
    const page = new DOMParser().parseFromString(body, "text/html");
    const meta = page.querySelector('meta[name="csrf-token"]');
    csrf = meta ? meta.content : "";
    document.title = page.title;
    document.body.replaceWith(document.adoptNode(page.body));
    start();
    window.consoleOpened = performance.now();  // when the page's content was in place (the benchmark reads it)
  }

  function post(url, body) {
    const headers = { "X-CSRF-Token": csrf, "X-Console-Token": token };
    if (body !== undefined) { headers["Content-Type"] = "application/json"; }
    return fetch(url, { method: "POST", credentials: "omit", headers: headers,
                        body: body === undefined ? undefined : JSON.stringify(body) });
  }

  // -- live sections --------------------------------------------------------------------------
  // A section is fetched at once when its topic changes, then at most once every GAP_MS while changes keep
  // coming (a busy run changes many times a second; the page shows its latest state, not every step of it).
  const GAP_MS = 1000;
  const busy = new Map();  // section id -> whether another fetch is due once this one lands
  const last = new Map();  // section id -> when it was last fetched
  async function refresh(id) {
    if (busy.has(id)) { busy.set(id, true); return; }
    const wait = (last.get(id) || 0) + GAP_MS - Date.now();
    if (wait > 0) {
      busy.set(id, true);
      setTimeout(function () { busy.delete(id); refresh(id); }, wait);
      return;
    }
    busy.set(id, false);
    last.set(id, Date.now());
    try {
      const current = document.getElementById(id);
      if (!current) { return; }
      const answer = await get(current.dataset.live);
      if (!answer.ok) { return; }
      const holder = document.createElement("div");
      holder.innerHTML = await answer.text();
      const fresh = holder.querySelector("#" + CSS.escape(id));
      const now = document.getElementById(id);
      if (fresh && now && !now.contains(document.activeElement)) {
        now.replaceWith(fresh);
        window.consoleUpdates += 1;
        window.consoleUpdated = Date.now();
        ticking();
      }
    } finally {
      const again = busy.get(id);
      busy.delete(id);
      if (again) { refresh(id); }
    }
  }

  function notice(n) {
    const box = document.getElementById("notices");
    if (box) {
      const item = document.createElement("div");
      item.className = "notice";
      const link = document.createElement("a");
      link.href = n.url;
      link.textContent = n.title;
      item.appendChild(link);
      item.appendChild(document.createTextNode(": " + n.body));
      const seen = document.createElement("button");
      seen.type = "button";
      seen.className = "seen";
      seen.textContent = "seen";
      seen.addEventListener("click", function () { item.remove(); });
      item.appendChild(seen);
      box.appendChild(item);  // it stays until the person says it was seen (a page left open all day)
      while (box.children.length > 8) { box.firstElementChild.remove(); }
    }
    if (window.Notification && Notification.permission === "granted") {
      const shown = new Notification(n.title, { body: n.body, tag: n.url });
      shown.onclick = function () { window.focus(); window.location.href = n.url; };
    }
  }

  // The event stream, read over fetch (an EventSource cannot send the token's header); a stream that ends or
  // fails is opened again after a second, as an EventSource would.
  function dispatch(block) {
    let event = "message";
    const data = [];
    block.split("\n").forEach(function (line) {
      if (line.startsWith("event:")) { event = line.slice(6).trim(); }
      else if (line.startsWith("data:")) { data.push(line.slice(5).replace(/^ /, "")); }
    });
    if (!data.length) { return; }
    const value = JSON.parse(data.join("\n"));
    if (event === "change") {
      const topics = new Set(value);
      document.querySelectorAll("[data-live]").forEach(function (section) {
        const wanted = (section.dataset.topics || "").split(" ");
        if (wanted.some(function (t) { return topics.has(t); })) { refresh(section.id); }
      });
    } else if (event === "notify") {
      notice(value);
    }
  }

  async function listen() {
    for (;;) {
      try {
        const answer = await get("/events");
        if (answer.ok && answer.body) {
          const reader = answer.body.pipeThrough(new TextDecoderStream()).getReader();
          let buffer = "";
          for (;;) {
            const part = await reader.read();
            if (part.done) { break; }
            buffer += part.value;
            let end;
            while ((end = buffer.indexOf("\n\n")) >= 0) {
              dispatch(buffer.slice(0, end));
              buffer = buffer.slice(end + 2);
            }
          }
        }
      } catch (e) { /* the console stopped or the connection broke: open it again */ }
      await new Promise(function (done) { setTimeout(done, 1000); });
    }
  }

  // -- approvals ------------------------------------------------------------------------------
  document.addEventListener("click", async function (e) {
    const button = e.target.closest("button.decide");
    if (!button) { return; }
    const row = button.closest("tr");
    row.querySelectorAll("button").forEach(function (b) { b.disabled = true; });
    const answer = await post("/approvals/" + encodeURIComponent(button.dataset.id) + "/" + button.dataset.decision);
    const said = (await answer.text()).trim();
    const cell = row.querySelector("td.buttons");
    if (cell) { cell.textContent = said; }
    if (!answer.ok) { row.querySelectorAll("button").forEach(function (b) { b.disabled = false; }); }
  });

  // Keys, as review tools have them, on the calls waiting for the person: j/k the next or previous call,
  // a approve, d deny, A always (approve and write the rule); never while the person types.
  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey || e.target.closest("input, textarea, select, [contenteditable]")) { return; }
    const rows = Array.from(document.querySelectorAll("table.approvals tr[data-id]"));
    if (!rows.length) { return; }
    let at = rows.findIndex(function (r) { return r.classList.contains("selected"); });
    if (e.key === "j" || e.key === "k") {
      at = at < 0 ? 0 : Math.max(0, Math.min(rows.length - 1, at + (e.key === "j" ? 1 : -1)));
      rows.forEach(function (r) { r.classList.remove("selected"); });
      rows[at].classList.add("selected");
      rows[at].scrollIntoView({ block: "nearest" });
      e.preventDefault();
      return;
    }
    const decision = { a: "approve", d: "deny", A: "always" }[e.key];
    if (!decision) { return; }
    const row = rows[at < 0 ? 0 : at];
    const button = row.querySelector('button.decide[data-decision="' + decision + '"]');
    if (button && !button.disabled) { button.click(); e.preventDefault(); }
  });

  function ticking() {
    document.querySelectorAll("td.expiry").forEach(function (cell) {
      const left = Math.max(0, Math.round(Number(cell.dataset.expires) - Date.now() / 1000));
      cell.textContent = left ? left + " s" : "expired";
    });
  }
  setInterval(ticking, 1000);

  // -- the change: comments and send back -----------------------------------------------------
  const comments = [];
  function listComments() {
    const list = document.getElementById("comments");
    if (!list) { return; }
    list.replaceChildren();
    comments.forEach(function (c, i) {
      const item = document.createElement("li");
      item.textContent = c.path + " " + (c.side === "old" ? "removed line " : "line ") + c.line + ": " + c.text + " ";
      const drop = document.createElement("button");
      drop.type = "button";
      drop.textContent = "remove";
      drop.addEventListener("click", function () { comments.splice(i, 1); listComments(); });
      item.appendChild(drop);
      list.appendChild(item);
    });
  }

  document.addEventListener("click", function (e) {
    const button = e.target.closest("button.comment");
    if (!button) { return; }
    const row = button.closest("tr");
    if (row.nextElementSibling && row.nextElementSibling.classList.contains("comment-row")) { return; }
    const path = row.closest("section.file").dataset.path;
    const editor = document.createElement("tr");
    editor.className = "comment-row";
    const cell = document.createElement("td");
    cell.colSpan = 3;
    const area = document.createElement("textarea");
    area.rows = 3;
    area.placeholder = "what should the agent change here?";
    const add = document.createElement("button");
    add.type = "button";
    add.className = "add-comment";
    add.textContent = "add comment";
    const cancel = document.createElement("button");
    cancel.type = "button";
    cancel.textContent = "cancel";
    cell.append(area, add, cancel);
    editor.appendChild(cell);
    row.after(editor);
    area.focus();
    cancel.addEventListener("click", function () { editor.remove(); });
    add.addEventListener("click", function () {
      if (!area.value.trim()) { return; }
      comments.push({ path: path, side: row.dataset.side, line: Number(row.dataset.line), text: area.value });
      const shown = document.createElement("td");
      shown.colSpan = 3;
      shown.textContent = "comment: " + area.value;
      editor.replaceChildren(shown);
      listComments();
    });
  });

  // -- a page's own controls, once its content is in place --------------------------------------
  function start() {
    const ask = document.getElementById("notify");
    if (ask && window.Notification && Notification.permission === "default") {
      ask.hidden = false;
      ask.addEventListener("click", function () {
        Notification.requestPermission().then(function () { ask.hidden = true; });
      });
    }

    const send = document.getElementById("send");
    if (send) {
      send.addEventListener("click", async function () {
        send.disabled = true;
        const note = document.getElementById("note");
        const answer = await post("/agents/" + encodeURIComponent(send.dataset.agent) + "/send-back",
                                  { comments: comments, note: note ? note.value : "" });
        const said = await answer.json();
        const out = document.getElementById("sent");
        out.textContent = " " + said.message + " ";
        if (said.sent) {
          const link = document.createElement("a");
          link.href = said.agent;
          link.textContent = "watch it";
          out.appendChild(link);
        } else {
          send.disabled = false;
        }
      });
    }
    ticking();
    listen();
  }

  open();
})();
