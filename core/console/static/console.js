// MindRouter console: copy buttons and confirmations. Loaded from a file
// (the Content-Security-Policy allows no inline script); every page works
// without it, these only add convenience.
"use strict";
document.addEventListener("click", function (ev) {
  var b = ev.target.closest ? ev.target.closest("button.copy") : null;
  if (!b) return;
  var el = document.getElementById(b.getAttribute("data-copy"));
  if (!el) return;
  var text = el.textContent;
  var done = function () { var t = b.textContent; b.textContent = "Copied"; setTimeout(function () { b.textContent = t; }, 1500); };
  if (navigator.clipboard && navigator.clipboard.writeText) {
    navigator.clipboard.writeText(text).then(done, function () { select(el); });
  } else {
    select(el);
  }
});
function select(el) {
  var r = document.createRange();
  r.selectNodeContents(el);
  var s = window.getSelection();
  s.removeAllRanges();
  s.addRange(r);
}
document.addEventListener("submit", function (ev) {
  var f = ev.target;
  if (f.classList && f.classList.contains("confirm") && !window.confirm(f.getAttribute("data-confirm") || "Are you sure?")) {
    ev.preventDefault();
  }
});
// An element with data-refresh="N" (the queue page) is fetched again every
// N seconds while the tab is visible and swapped in place, so the page
// stays live without losing the scroll position. Without JavaScript the
// page's Refresh link does the same by hand.
(function () {
  var el = document.querySelector("[data-refresh]");
  if (!el || !window.fetch || !window.DOMParser) return;
  var every = Math.max(1, parseInt(el.getAttribute("data-refresh"), 10) || 5) * 1000;
  var busy = false;
  setInterval(function () {
    if (busy || document.visibilityState === "hidden") return;
    busy = true;
    fetch(location.href, { credentials: "same-origin", headers: { Accept: "text/html" } }).then(function (resp) {
      return resp.text().then(function (html) {
        var fresh = new DOMParser().parseFromString(html, "text/html").getElementById(el.id);
        if (!resp.ok || !fresh) {
          location.reload(); // signed out, or an error page: show it as a whole
          return;
        }
        el.innerHTML = fresh.innerHTML;
        el.setAttribute("data-refreshed", String(Date.now()));
      });
    }).catch(function () {}).then(function () { busy = false; });
  }, every);
})();
