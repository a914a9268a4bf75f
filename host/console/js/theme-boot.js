// Runs before the page paints (a classic script in <head>): applies the theme chosen with the
// header toggle, kept in localStorage; without a choice the CSS follows prefers-color-scheme.
(function () {
  var KEY = 'meshlens.theme';
  var root = document.documentElement;
  function effective() {
    var t = root.dataset.theme;
    if (t === 'dark' || t === 'light') return t;
    return window.matchMedia && window.matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
  }
  function label(btn) {
    var dark = effective() === 'dark';
    btn.textContent = dark ? 'Light mode' : 'Dark mode';
    btn.setAttribute('aria-pressed', String(dark));
    btn.dataset.theme = effective();
  }
  try {
    var saved = localStorage.getItem(KEY);
    if (saved === 'dark' || saved === 'light') root.dataset.theme = saved;
  } catch (e) { /* storage blocked: follow the system */ }
  document.addEventListener('DOMContentLoaded', function () {
    var btn = document.getElementById('theme-toggle');
    if (!btn) return;
    label(btn);
    btn.addEventListener('click', function () {
      var next = effective() === 'dark' ? 'light' : 'dark';
      root.dataset.theme = next;
      try { localStorage.setItem(KEY, next); } catch (e) { /* not remembered */ }
      label(btn);
    });
    if (window.matchMedia) {
      window.matchMedia('(prefers-color-scheme: dark)').addEventListener('change', function () { label(btn); });
    }
  });
})();
