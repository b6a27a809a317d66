// Progressive enhancement only: every page works without this file.
// htmx requests carry the CSRF token from the page's meta tag.
document.addEventListener("htmx:configRequest", function (event) {
  var meta = document.querySelector('meta[name="csrf-token"]');
  if (meta) {
    event.detail.headers["X-CSRF-Token"] = meta.getAttribute("content");
  }
});
