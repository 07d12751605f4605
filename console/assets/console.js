// The queues page's live refresh: every 5 seconds, the queues' table and chart are
// fetched again as HTML rendered by the console (/queues/live) and put in place. Nothing
// else on any page needs JavaScript.
(function () {
  "use strict";
  var live = document.getElementById("live");
  if (!live) { return; }
  var status = document.getElementById("live-status");
  function refresh() {
    fetch("/queues/live", { credentials: "same-origin", cache: "no-store" })
      .then(function (r) { if (!r.ok) { throw new Error("HTTP " + r.status); } return r.text(); })
      .then(function (html) {
        live.innerHTML = html;
        if (status) { status.textContent = "updated " + new Date().toLocaleTimeString(); }
      })
      .catch(function (e) { if (status) { status.textContent = "refresh failed: " + e.message; } })
      .finally(function () { setTimeout(refresh, 5000); });
  }
  setTimeout(refresh, 5000);
  // Select all: the failed jobs' checkboxes.
  var all = document.getElementById("select-all");
  if (all) {
    all.addEventListener("change", function () {
      document.querySelectorAll("input[name=id]").forEach(function (box) { box.checked = all.checked; });
    });
  }
})();
