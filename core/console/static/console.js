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
