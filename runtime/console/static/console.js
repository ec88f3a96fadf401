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
