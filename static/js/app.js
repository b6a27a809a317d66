// Progressive enhancement only: every page works without this file.
// htmx requests carry the CSRF token from the page's meta tag.
document.addEventListener("htmx:configRequest", function (event) {
  var meta = document.querySelector('meta[name="csrf-token"]');
  if (meta) {
    event.detail.headers["X-CSRF-Token"] = meta.getAttribute("content");
  }
});

// Forms re-render with their errors (400, 409, 429 …) and error pages explain
// what went wrong: swap those responses like successful ones instead of
// dropping them, as htmx does by default.
document.addEventListener("htmx:beforeSwap", function (event) {
  if (event.detail.xhr.status >= 400) {
    event.detail.shouldSwap = true;
    event.detail.isError = false;
  }
});

// The header's menu on narrow screens is a details element that works
// without this file; Escape closes it and gives the focus back to its toggle.
document.addEventListener("keydown", function (event) {
  if (event.key !== "Escape") {
    return;
  }
  var menu = document.querySelector(".site-menu-toggle[open]");
  if (menu) {
    menu.open = false;
    menu.querySelector("summary").focus();
  }
});
