// promcp-device console: refreshes the live sections every 2 seconds
// without reloading the page (values, actuators, approvals, audit), from
// /console/live, which renders them on the gateway.
(function () {
  "use strict";
  var status = document.getElementById("live-status");
  var auditBox = document.querySelector("[data-live=audit]");
  function refresh() {
    var q = auditBox ? auditBox.getAttribute("data-query") : "";
    fetch("/console/live" + (q ? "?" + q : ""), { credentials: "same-origin", cache: "no-store" })
      .then(function (r) {
        if (r.status === 401) { location.href = "/console/login"; throw new Error("logged out"); }
        if (!r.ok) { throw new Error("HTTP " + r.status); }
        return r.json();
      })
      .then(function (parts) {
        document.querySelectorAll("[data-live]").forEach(function (el) {
          var html = parts[el.getAttribute("data-live")];
          if (typeof html === "string" && el.getAttribute("data-last") !== html) {
            if (el.contains(document.activeElement) && document.activeElement.tagName === "BUTTON") { return; }
            el.innerHTML = html;
            el.setAttribute("data-last", html);
          }
        });
        status.textContent = "live · " + new Date().toLocaleTimeString();
        status.className = "muted";
      })
      .catch(function (e) { status.textContent = "not updating: " + e.message; status.className = "bad"; });
  }
  setInterval(refresh, 2000);
})();
