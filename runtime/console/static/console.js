// Live runs: the server says when the state folder changed (server-sent events); the page fetches the runs'
// fragment again and puts it in place. Same origin only, no inline script (the console's CSP).
"use strict";
(function () {
  const section = document.getElementById("runs");
  if (!section || !window.EventSource) { return; }
  const events = new EventSource("/events");
  events.addEventListener("runs", async function () {
    const answer = await fetch(section.dataset.live || "/runs", { credentials: "same-origin" });
    if (!answer.ok) { return; }
    const holder = document.createElement("div");
    holder.innerHTML = await answer.text();  // the server escaped every text a run wrote
    const fresh = holder.querySelector("#runs");
    const current = document.getElementById("runs");
    if (fresh && current) { current.replaceWith(fresh); }
  });
})();

// Approvals: one click decides a waiting call (the CSRF token from the page's own meta tag); the expiry ticks.
(function () {
  const meta = document.querySelector('meta[name="csrf-token"]');
  document.querySelectorAll("button.decide").forEach(function (button) {
    button.addEventListener("click", async function () {
      const url = "/approvals/" + encodeURIComponent(button.dataset.id) + "/" + button.dataset.decision;
      const answer = await fetch(url, { method: "POST", credentials: "same-origin",
                                        headers: { "X-CSRF-Token": meta ? meta.content : "" } });
      const row = button.closest("tr");
      const said = (await answer.text()).trim();
      if (row) { row.querySelector("td:last-child").textContent = said; }
    });
  });
  const cells = document.querySelectorAll("td.expiry");
  if (cells.length) {
    setInterval(function () {
      const now = Date.now() / 1000;
      cells.forEach(function (cell) {
        const left = Math.max(0, Math.round(Number(cell.dataset.expires) - now));
        cell.textContent = left ? left + " s" : "expired";
      });
    }, 1000);
  }
})();
