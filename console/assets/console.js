// What the pages do with JavaScript, each on the pages that have its element: the
// queues page's live refresh (every 5 seconds the queues' table and chart are fetched
// again as HTML rendered by the console, /queues/live with the page's filter, and put
// in place), and the
// "select all" box of a queue's failed jobs. Everything else works without it.
(function () {
  "use strict";
  var live = document.getElementById("live");
  if (live) {
    var status = document.getElementById("live-status");
    var refresh = function () {
      fetch("/queues/live" + window.location.search, { credentials: "same-origin", cache: "no-store" })
        .then(function (r) { if (!r.ok) { throw new Error("HTTP " + r.status); } return r.text(); })
        .then(function (html) {
          live.innerHTML = html;
          if (status) { status.textContent = "updated " + new Date().toLocaleTimeString(); }
        })
        .catch(function (e) { if (status) { status.textContent = "refresh failed: " + e.message; } })
        .finally(function () { setTimeout(refresh, 5000); });
    };
    setTimeout(refresh, 5000);
  }
  var all = document.getElementById("select-all");
  if (all) {
    all.addEventListener("change", function () {
      document.querySelectorAll("#failed input[name=id]").forEach(function (box) { box.checked = all.checked; });
    });
  }
})();
