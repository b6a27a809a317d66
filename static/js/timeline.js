// Timeline viewer, progressive enhancement only: without this file the page
// shows the step named by ?step=N (links reload the page) and the one a
// #step-N link targets. With it, steps switch in place, the keyboard steps
// through them (← → or j k, Home and End), the address keeps ?step=N, a
// step the page holds only by its heading (data-src) loads in full when it is
// shown or is next to the one shown, and the accessibility text and network
// requests of a step load when opened.
(function () {
  "use strict";

  // The page may be swapped in by htmx more than once; the document-level
  // listeners are installed once and always act on the viewer in the page.
  if (window.proctorTimeline) {
    window.proctorTimeline.scan(document);
    return;
  }

  function viewer() {
    return document.querySelector("[data-timeline][data-enhanced]");
  }

  function panels(root) {
    return root.querySelectorAll(".tl-step");
  }

  function stepCount(root) {
    return panels(root).length;
  }

  function currentStep(root) {
    return parseInt(root.getAttribute("data-current"), 10) || 1;
  }

  // show makes step n (from 1) the current one and records it in the address.
  function show(root, n, opts) {
    var count = stepCount(root);
    if (count === 0) {
      return;
    }
    n = Math.min(Math.max(n, 1), count);
    root.setAttribute("data-current", String(n));
    panels(root).forEach(function (panel) {
      var on = panel.getAttribute("data-step") === String(n);
      panel.classList.toggle("tl-current", on);
      if (on) {
        load(root, panel);
        var img = panel.querySelector(".tl-screenshot");
        if (img) {
          img.loading = "eager";
        }
      }
    });
    root.querySelectorAll(".tl-frame").forEach(function (frame) {
      if (frame.getAttribute("data-step") === String(n)) {
        frame.setAttribute("aria-current", "step");
        centreFrame(frame);
      } else {
        frame.removeAttribute("aria-current");
      }
    });
    var status = root.querySelector("[data-testid=step-status]");
    if (status) {
      status.textContent = "Step " + n + " of " + count;
    }
    preload(root, n - 1);
    preload(root, n + 1);
    if (opts && opts.keepURL) {
      return;
    }
    var url = new URL(window.location.href);
    url.searchParams.set("step", String(n));
    url.hash = "";
    if (url.href !== window.location.href) {
      history.replaceState(history.state, "", url.pathname + url.search);
    }
  }

  // centreFrame scrolls the filmstrip (only it, never the page) so that the
  // current frame is in view.
  function centreFrame(frame) {
    var strip = frame.closest(".tl-filmstrip");
    if (!strip) {
      return;
    }
    var left = frame.offsetLeft; // the strip is the offset parent (position: relative)
    if (left < strip.scrollLeft || left + frame.offsetWidth > strip.scrollLeft + strip.clientWidth) {
      strip.scrollLeft = left - (strip.clientWidth - frame.offsetWidth) / 2;
    }
  }

  // preload fetches a neighbouring step (in full, then its screenshot) so
  // that stepping is instant.
  function preload(root, n) {
    var panel = root.querySelector('.tl-step[data-step="' + n + '"]');
    if (!panel) {
      return;
    }
    if (panel.hasAttribute("data-src")) {
      load(root, panel);
      return;
    }
    var img = panel.querySelector(".tl-screenshot");
    if (img && img.loading !== "eager") {
      img.loading = "eager";
    }
  }

  // load replaces a step held by its heading (data-src) with the step in
  // full, once; the step keeps being the current one if it was, and a
  // neighbour of the current step starts loading its screenshot. On failure
  // the heading and its link (which reloads the page on the step) stay.
  function load(root, panel) {
    var src = panel.getAttribute("data-src");
    if (!src || panel.hasAttribute("data-loading")) {
      return;
    }
    panel.setAttribute("data-loading", "");
    panel.setAttribute("aria-busy", "true");
    fetch(src, { headers: { "HX-Request": "true" }, credentials: "same-origin" })
      .then(function (res) {
        if (!res.ok) {
          throw new Error("step " + src + ": " + res.status);
        }
        return res.text();
      })
      .then(function (html) {
        // Server-rendered, escaped HTML of this site: one <li> step.
        var tpl = document.createElement("template");
        tpl.innerHTML = html.trim();
        var full = tpl.content.firstElementChild;
        if (!full || !panel.parentNode) {
          throw new Error("step " + src + ": empty");
        }
        var n = parseInt(full.getAttribute("data-step"), 10);
        var current = currentStep(root);
        full.classList.toggle("tl-current", n === current);
        var img = full.querySelector(".tl-screenshot");
        if (img) {
          img.loading = Math.abs(n - current) <= 1 ? "eager" : "lazy";
        }
        panel.replaceWith(full);
      })
      .catch(function () {
        panel.removeAttribute("data-loading");
        panel.removeAttribute("aria-busy");
      });
  }

  function stepFromHash(hash) {
    var m = /^#step-(\d+)$/.exec(hash || "");
    return m ? parseInt(m[1], 10) : 0;
  }

  function typing(target) {
    if (!target || !target.closest) {
      return false;
    }
    return target.isContentEditable || !!target.closest("input, textarea, select, [contenteditable]");
  }

  function onKey(event) {
    var root = viewer();
    if (!root || event.defaultPrevented || event.altKey || event.ctrlKey || event.metaKey || typing(event.target)) {
      return;
    }
    var n = currentStep(root);
    switch (event.key) {
      case "ArrowLeft":
      case "k":
        n -= 1;
        break;
      case "ArrowRight":
      case "j":
        n += 1;
        break;
      case "Home":
        n = 1;
        break;
      case "End":
        n = stepCount(root);
        break;
      default:
        return;
    }
    event.preventDefault();
    show(root, n);
  }

  // onClick switches steps for the filmstrip, the previous/next links and
  // the judges' citations (#step-N) instead of loading a page.
  function onClick(event) {
    if (event.defaultPrevented || event.button !== 0 || event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) {
      return;
    }
    var link = event.target.closest && event.target.closest("a[data-step]");
    var root = viewer();
    if (!link || !root) {
      return;
    }
    var n = parseInt(link.getAttribute("data-step"), 10);
    if (!n) {
      return;
    }
    event.preventDefault();
    show(root, n);
    if (!root.contains(link)) {
      root.scrollIntoView({ block: "start" });
    }
  }

  function onHashChange() {
    var root = viewer();
    var n = stepFromHash(window.location.hash);
    if (root && n) {
      show(root, n);
      root.scrollIntoView({ block: "start" });
    }
  }

  // onToggle loads a step's collapsed part the first time it is opened.
  function onToggle(event) {
    var details = event.target;
    if (!details.matches || !details.matches("details.tl-lazy") || !details.open || details.hasAttribute("data-loaded")) {
      return;
    }
    var body = details.querySelector(".tl-lazy-body");
    var link = details.querySelector(".tl-lazy-body a[href]");
    if (!link) {
      return;
    }
    details.setAttribute("data-loaded", "");
    body.setAttribute("aria-busy", "true");
    fetch(link.getAttribute("href"), { headers: { "HX-Request": "true" }, credentials: "same-origin" })
      .then(function (res) {
        return res.text().then(function (html) {
          // Server-rendered, escaped HTML of this site (an error fragment for 4xx).
          body.innerHTML = html;
        });
      })
      .catch(function () {
        details.removeAttribute("data-loaded");
      })
      .finally(function () {
        body.removeAttribute("aria-busy");
      });
  }

  function enhance(root) {
    if (root.hasAttribute("data-enhanced")) {
      return;
    }
    // Another timeline swapped in by htmx replaces the previous one.
    document.querySelectorAll("[data-timeline][data-enhanced]").forEach(function (old) {
      old.removeAttribute("data-enhanced");
    });
    root.setAttribute("data-enhanced", "");
    var hint = root.querySelector("[data-keys-hint]");
    if (hint) {
      hint.hidden = false;
    }
    // A #step-N link (a judge's citation) names the step to show; otherwise
    // the page already shows ?step=N and the address stays as it is.
    var cited = stepFromHash(window.location.hash);
    if (cited) {
      show(root, cited);
      root.scrollIntoView({ block: "start" });
    } else {
      show(root, currentStep(root), { keepURL: true });
    }
  }

  function scan(node) {
    if (!node || !node.querySelectorAll) {
      return;
    }
    if (node.matches && node.matches("[data-timeline]")) {
      enhance(node);
    }
    node.querySelectorAll("[data-timeline]").forEach(enhance);
  }

  window.proctorTimeline = { scan: scan, show: show };
  document.addEventListener("keydown", onKey);
  document.addEventListener("click", onClick);
  document.addEventListener("toggle", onToggle, true);
  window.addEventListener("hashchange", onHashChange);
  document.addEventListener("htmx:load", function (event) {
    scan(event.target);
  });
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () {
      scan(document);
    });
  } else {
    scan(document);
  }
})();
