// promcp-device console: refreshes the live sections every 2 seconds
// without reloading the page (values, actuators, approvals, health, audit),
// from /console/live, which renders them on the gateway; draws each
// capability's history (/console/history: buckets with their quality) as
// inline SVG, redrawn after each refresh and fetched again every 30 s.
(function () {
  "use strict";
  var NS = "http://www.w3.org/2000/svg";
  var status = document.getElementById("live-status");
  var auditBox = document.querySelector("[data-live=audit]");
  var ranges = {}; // capability → "1h", "24h" or "7d"
  var data = {};   // capability → the last history answer
  var fetched = {}; // capability → when it was fetched (ms)

  function rangeOf(cap) { return ranges[cap] || "1h"; }

  function el(name, attrs, parent) {
    var e = document.createElementNS(NS, name);
    Object.keys(attrs).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (parent) { parent.appendChild(e); }
    return e;
  }

  function num(v) {
    if (typeof v === "number") { return v; }
    if (typeof v === "boolean") { return v ? 1 : 0; }
    return null;
  }

  function fmt(v) {
    return Math.abs(v) >= 100 ? v.toFixed(0) : String(Math.round(v * 100) / 100);
  }

  // clockOf writes an ISO time as the console does: 24-hour.
  function clockOf(ms) {
    var d = new Date(ms);
    var p = function (n) { return (n < 10 ? "0" : "") + n; };
    return p(d.getHours()) + ":" + p(d.getMinutes());
  }

  // draw draws d (a history answer) into box as an SVG: a line through
  // the buckets' values, broken where there is no bucket (a gap), each
  // bucket that is not good shaded by its worst quality.
  function draw(box, d) {
    box.textContent = "";
    var W = 600, H = 84, L = 70, B = 14, T = 5;
    var bool = d.buckets.some(function (b) { return typeof b.value === "boolean"; });
    var t0 = Date.parse(d.since), t1 = Date.parse(d.until), span = Math.max(t1 - t0, 1);
    var svg = el("svg", { viewBox: "0 0 " + W + " " + H, "class": "spark", role: "img" }, box);
    var x = function (t) { return L + (t - t0) / span * (W - L - 2); };
    var bw = Math.max(d.step_ms / span * (W - L - 2), 1);
    var vals = d.buckets.map(function (b) { return num(b.value); }).filter(function (v) { return v !== null; });
    var lo = Math.min.apply(null, vals), hi = Math.max.apply(null, vals);
    if (!vals.length || bool) { lo = 0; hi = 1; }
    if (hi === lo) { var pad = Math.max(Math.abs(hi) * 0.01, 0.5); lo -= pad; hi += pad; }
    var y = function (v) { return T + (hi - v) / (hi - lo) * (H - T - B); };
    el("rect", { x: L, y: T, width: W - L - 2, height: H - T - B, "class": "plot" }, svg);
    var gaps = 0, bad = 0, path = "", prevEnd = t0;
    d.buckets.forEach(function (b) {
      var s = Date.parse(b.start);
      if (s - prevEnd >= d.step_ms) {
        gaps++;
        el("rect", { x: x(Math.max(prevEnd, t0)), y: T, width: Math.max(x(s) - x(Math.max(prevEnd, t0)), 1), height: H - T - B, "class": "gap" }, svg);
      }
      if (b.quality !== "good") {
        bad++;
        var r = el("rect", { x: x(s), y: T, width: bw, height: H - T - B, "class": "qb q-" + b.quality }, svg);
        el("title", {}, r).textContent = b.start + ": " + b.quality + " (" + b.samples + " samples)";
      }
      var v = num(b.value);
      if (v === null || s - prevEnd >= d.step_ms) {
        path += v === null ? "" : "M" + (x(s) + bw / 2).toFixed(1) + " " + y(v).toFixed(1);
      } else {
        path += (path ? "L" : "M") + (x(s) + bw / 2).toFixed(1) + " " + y(v).toFixed(1);
      }
      prevEnd = s + d.step_ms;
    });
    if (d.buckets.length && t1 - prevEnd >= d.step_ms) {
      gaps++;
      el("rect", { x: x(prevEnd), y: T, width: Math.max(x(t1) - x(prevEnd), 1), height: H - T - B, "class": "gap" }, svg);
    }
    if (path) { el("path", { d: path, "class": "line" }, svg); }
    d.buckets.forEach(function (b) { // a dot on each bucket, so a lone one shows
      var v = num(b.value);
      if (v !== null) { el("circle", { cx: (x(Date.parse(b.start)) + bw / 2).toFixed(1), cy: y(v).toFixed(1), r: 1.8, "class": "dot" }, svg); }
    });
    var unit = d.unit ? " " + d.unit : "";
    el("text", { x: L - 3, y: T + 9, "class": "axis", "text-anchor": "end" }, svg).textContent = bool ? "on" : fmt(hi) + unit;
    el("text", { x: L - 3, y: H - B, "class": "axis", "text-anchor": "end" }, svg).textContent = bool ? "off" : fmt(lo) + unit;
    el("text", { x: L, y: H - 3, "class": "axis" }, svg).textContent = clockOf(t0);
    el("text", { x: W - 2, y: H - 3, "class": "axis", "text-anchor": "end" }, svg).textContent = clockOf(t1);
    if (!d.buckets.length) {
      el("text", { x: W / 2, y: H / 2, "class": "axis", "text-anchor": "middle" }, svg).textContent = "no samples in the last " + d.range;
    }
    svg.setAttribute("aria-label", d.capability + " over the last " + d.range + ": " + d.buckets.length + " buckets of " + d.step +
      (bad ? ", " + bad + " not good" : "") + (gaps ? ", " + gaps + " gaps" : ""));
    box.setAttribute("data-buckets", d.buckets.length);
    box.setAttribute("data-bad", bad);
    box.setAttribute("data-gaps", gaps);
    box.setAttribute("data-range", d.range);
  }

  // decorate redraws every chart from what was fetched, marks the chosen
  // range and points the CSV link at the same query.
  function decorate() {
    document.querySelectorAll(".chart[data-cap]").forEach(function (box) {
      var cap = box.getAttribute("data-cap");
      if (data[cap] && data[cap].range === rangeOf(cap)) { draw(box, data[cap]); }
    });
    document.querySelectorAll("button.range").forEach(function (b) {
      b.className = "range" + (b.getAttribute("data-range") === rangeOf(b.getAttribute("data-cap")) ? " on" : "");
    });
    document.querySelectorAll("a.csv").forEach(function (a) {
      var cap = a.getAttribute("data-cap");
      a.href = "/console/history.csv?capability=" + encodeURIComponent(cap) + "&range=" + rangeOf(cap);
    });
  }

  function load(cap) {
    fetched[cap] = Date.now();
    var rng = rangeOf(cap);
    fetch("/console/history?capability=" + encodeURIComponent(cap) + "&range=" + rng, { credentials: "same-origin", cache: "no-store" })
      .then(function (r) { if (!r.ok) { throw new Error("HTTP " + r.status); } return r.json(); })
      .then(function (d) { if (d.range === rangeOf(cap)) { data[cap] = d; decorate(); } })
      .catch(function (e) {
        var box = document.querySelector('.chart[data-cap="' + cap + '"]');
        if (box) { box.textContent = "history: " + e.message; }
      });
  }

  function loadAll() {
    document.querySelectorAll(".chart[data-cap]").forEach(function (box) {
      var cap = box.getAttribute("data-cap");
      if (!fetched[cap] || Date.now() - fetched[cap] > 30000) { load(cap); }
    });
  }

  document.addEventListener("click", function (ev) {
    var b = ev.target.closest ? ev.target.closest("button.range") : null;
    if (!b) { return; }
    var cap = b.getAttribute("data-cap");
    ranges[cap] = b.getAttribute("data-range");
    decorate();
    load(cap);
  });

  function busy(sec) {
    var a = document.activeElement;
    return sec.contains(a) && (a.tagName === "BUTTON" || a.tagName === "INPUT" || a.tagName === "SELECT");
  }

  function refresh() {
    var q = auditBox ? auditBox.getAttribute("data-query") : "";
    fetch("/console/live" + (q ? "?" + q : ""), { credentials: "same-origin", cache: "no-store" })
      .then(function (r) {
        if (r.status === 401) { location.href = "/console/login"; throw new Error("logged out"); }
        if (!r.ok) { throw new Error("HTTP " + r.status); }
        return r.json();
      })
      .then(function (parts) {
        document.querySelectorAll("[data-live]").forEach(function (sec) {
          var html = parts[sec.getAttribute("data-live")];
          if (typeof html === "string" && sec.getAttribute("data-last") !== html && !busy(sec)) {
            sec.innerHTML = html;
            sec.setAttribute("data-last", html);
          }
        });
        decorate();
        loadAll();
        status.textContent = "live · " + parts.clock;
        status.className = "muted";
      })
      .catch(function (e) { status.textContent = "not updating: " + e.message; status.className = "bad"; });
  }
  decorate();
  loadAll();
  setInterval(refresh, 2000);
})();
