// Annotation page, progressive enhancement only: without this file the label
// form posts with its buttons (save, submit, skip, flag) and the server
// redirects. With it:
//   - every change is saved at once (action=save) and "Saved at …" is
//     announced; the time the page is in view is measured and sent with each
//     save and submit as time_spent_ms (the time since the last one);
//   - the keyboard labels: a question's key (shown beside it) chooses it,
//     1–9 answer it and move on to the next unanswered one, n and p move
//     between questions, Backspace clears, Enter or Ctrl+Enter submits, Esc
//     leaves a text box, ? shows or hides the list of keys. The timeline's
//     keys (← → j k Home End) are left to timeline.js. Nothing fires while
//     typing in the reason box.
(function () {
  "use strict";

  // Pages swapped in by htmx run this file again: the document listeners are
  // installed once and act on the form in the page.
  if (window.proctorAnnotate) {
    window.proctorAnnotate.scan(document);
    return;
  }

  var LEGEND_KEY = "proctor.annotate.legend";
  var MIN_FLUSH_MS = 1000; // a hidden page sends its time only when there is some

  var state = null; // the enhanced form: see enhance

  // live returns the state while its form is in the page; an htmx navigation
  // may have swapped it out, and its clock must not count other pages.
  function live() {
    if (state && !document.contains(state.form)) {
      state = null;
    }
    return state;
  }

  // clock measures the time the page is visible, handed out in deltas.
  function newClock() {
    var clock = { pending: 0, since: 0 };
    clock.running = function () {
      return clock.since !== 0;
    };
    clock.resume = function () {
      if (!clock.since) {
        clock.since = Date.now();
      }
    };
    clock.pause = function () {
      if (clock.since) {
        clock.pending += Date.now() - clock.since;
        clock.since = 0;
      }
    };
    clock.peek = function () {
      return clock.pending + (clock.since ? Date.now() - clock.since : 0);
    };
    // take returns the time not sent yet and starts counting afresh.
    clock.take = function () {
      var ms = Math.max(0, Math.round(clock.peek()));
      clock.pending = 0;
      if (clock.since) {
        clock.since = Date.now();
      }
      return ms;
    };
    // giveBack returns time whose save failed, to send with the next one.
    clock.giveBack = function (ms) {
      clock.pending += ms;
    };
    if (document.visibilityState === "visible") {
      clock.resume();
    }
    return clock;
  }

  function questions() {
    return state ? Array.prototype.slice.call(state.form.querySelectorAll("fieldset[data-question]")) : [];
  }

  function radios(q) {
    return Array.prototype.slice.call(q.querySelectorAll('input[type="radio"]'));
  }

  function answered(q) {
    return radios(q).some(function (r) {
      return r.checked;
    });
  }

  function setStatus(text, isError) {
    var el = state && state.form.querySelector("[data-testid=save-status]");
    if (!el) {
      return;
    }
    el.textContent = text;
    el.classList.toggle("field-error", !!isError);
  }

  // setProblem says why the form was not sent (a question left, a reason
  // missing), apart from the save status that autosaves keep changing; ""
  // clears it.
  function setProblem(text) {
    var el = state && state.form.querySelector("[data-an-problem]");
    if (!el) {
      return;
    }
    el.textContent = text;
    el.hidden = text === "";
  }

  function clockTime(d) {
    return d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" });
  }

  function csrfToken() {
    var field = state.form.querySelector('input[name="_csrf"]');
    if (field) {
      return field.value;
    }
    var meta = document.querySelector('meta[name="csrf-token"]');
    return meta ? meta.getAttribute("content") : "";
  }

  // body is the form's labels and reason (without the buttons), with every
  // answer cleared since the last save sent as "".
  function body(action, ms) {
    var data = new URLSearchParams();
    new FormData(state.form).forEach(function (value, name) {
      if (name !== "action" && name !== "time_spent_ms" && typeof value === "string") {
        data.append(name, value);
      }
    });
    Object.keys(state.cleared).forEach(function (name) {
      if (!data.has(name)) {
        data.append(name, "");
      }
    });
    data.set("action", action);
    data.set("time_spent_ms", String(ms));
    return data;
  }

  // errorText reads the message of an error fragment (server-rendered HTML).
  function errorText(html, status) {
    var doc = new DOMParser().parseFromString(html, "text/html");
    var text = (doc.body && doc.body.textContent ? doc.body.textContent : "").trim();
    return text || "The server answered " + status + ".";
  }

  // save sends the labels as they are now. Saves run one at a time; a
  // change made while one is on its way is sent right after it.
  function save(opts) {
    var s = state;
    if (!s || s.submitting) {
      return;
    }
    if (s.inFlight) {
      s.again = true;
      return;
    }
    var ms = s.clock.take();
    var sentCleared = s.cleared;
    var data = body("save", ms);
    s.cleared = {};
    s.inFlight = true;
    s.again = false;
    if (!(opts && opts.quiet)) {
      setStatus("Saving…");
    }
    fetch(s.form.getAttribute("action"), {
      method: "POST",
      body: data,
      credentials: "same-origin",
      keepalive: !!(opts && opts.keepalive),
      headers: { "X-CSRF-Token": csrfToken(), "HX-Request": "true", "Content-Type": "application/x-www-form-urlencoded;charset=UTF-8" },
    })
      .then(function (res) {
        if (res.ok) {
          if (state === s) {
            setStatus("Saved at " + clockTime(new Date()));
            markInvalid(null);
          }
          return;
        }
        s.clock.giveBack(ms);
        restoreCleared(s, sentCleared);
        return res.text().then(function (html) {
          if (state === s) {
            setStatus("Not saved: " + errorText(html, res.status), true);
            markInvalid(res.headers.get("X-Error-Field"));
          }
        });
      })
      .catch(function () {
        s.clock.giveBack(ms);
        restoreCleared(s, sentCleared);
        if (state === s) {
          setStatus("Not saved: the server could not be reached. Your answers are kept on this page; they are sent with the next change.", true);
        }
      })
      .finally(function () {
        s.inFlight = false;
        if (s.again && state === s) {
          save();
        }
      });
  }

  function restoreCleared(s, cleared) {
    Object.keys(cleared).forEach(function (name) {
      s.cleared[name] = true;
    });
  }

  // markInvalid outlines the question a refusal names (none for null).
  function markInvalid(field) {
    questions().forEach(function (q) {
      var bad = field !== null && q.getAttribute("data-question") === field;
      q.classList.toggle("an-invalid", bad);
      if (bad) {
        q.setAttribute("aria-invalid", "true");
      } else if (!q.querySelector(".field-error")) {
        q.removeAttribute("aria-invalid");
      }
    });
  }

  // flush sends the time spent (and any unsent answer) when the page is
  // hidden or left, so that a closed tab still counts.
  function flush() {
    if (!live() || state.submitting) {
      return;
    }
    if (state.clock.peek() >= MIN_FLUSH_MS || Object.keys(state.cleared).length > 0) {
      save({ keepalive: true, quiet: true });
    }
  }

  function activate(q, opts) {
    if (!state || !q) {
      return;
    }
    questions().forEach(function (other) {
      other.classList.toggle("an-active", other === q);
      if (other === q) {
        other.setAttribute("data-active", "");
      } else {
        other.removeAttribute("data-active");
      }
    });
    state.active = q;
    if (!(opts && opts.noScroll)) {
      var aside = q.closest(".an-aside");
      if (aside && q === questions()[0]) {
        aside.scrollTop = 0; // the heading and time spent come back into view
      }
      q.scrollIntoView({ block: "nearest" });
    }
  }

  // nextUnanswered is the first unanswered question after from (wrapping),
  // or null when every question is answered.
  function nextUnanswered(from) {
    var qs = questions();
    var start = qs.indexOf(from);
    for (var i = 1; i <= qs.length; i++) {
      var q = qs[(start + i) % qs.length];
      if (!answered(q)) {
        return q;
      }
    }
    return null;
  }

  function step(delta) {
    var qs = questions();
    if (qs.length === 0) {
      return;
    }
    var i = qs.indexOf(state.active);
    activate(qs[(i + delta + qs.length) % qs.length]);
  }

  // jump chooses the question whose key this is; a key shared by several
  // (the rubric items) goes to the next of them, starting with an unanswered one.
  function jump(key) {
    var qs = questions().filter(function (q) {
      return q.getAttribute("data-key") === key;
    });
    if (qs.length === 0) {
      return false;
    }
    var target;
    var at = qs.indexOf(state.active);
    if (at >= 0) {
      target = qs[(at + 1) % qs.length];
    } else {
      target = qs.filter(function (q) {
        return !answered(q);
      })[0] || qs[0];
    }
    activate(target);
    return true;
  }

  function answer(n) {
    var q = state.active;
    if (!q) {
      return false;
    }
    var options = radios(q);
    if (n < 1 || n > options.length) {
      return false;
    }
    var r = options[n - 1];
    if (!r.checked) {
      r.checked = true;
      delete state.cleared[r.name];
      r.dispatchEvent(new Event("change", { bubbles: true }));
    }
    var next = nextUnanswered(q);
    if (next) {
      activate(next);
    }
    return true;
  }

  function clear() {
    var q = state.active;
    if (!q || !answered(q)) {
      return;
    }
    radios(q).forEach(function (r) {
      r.checked = false;
    });
    state.cleared[q.getAttribute("data-question")] = true;
    save();
  }

  function button(action) {
    return state.form.querySelector('button[name="action"][value="' + action + '"]');
  }

  function submitAction(action) {
    var b = button(action);
    if (b) {
      state.form.requestSubmit(b);
    }
  }

  function toggleLegend() {
    var legend = state.form.querySelector("[data-an-legend]");
    if (legend) {
      legend.open = !legend.open;
    }
  }

  // typing reports whether keys go to a text field (not a radio button).
  function typing(target) {
    if (!target || !target.closest) {
      return false;
    }
    if (target.isContentEditable || target.closest("textarea, select, [contenteditable]")) {
      return true;
    }
    var input = target.closest("input");
    return !!input && input.type !== "radio" && input.type !== "checkbox" && input.type !== "hidden";
  }

  function onKey(event) {
    if (!live() || event.defaultPrevented || event.altKey || event.metaKey) {
      return;
    }
    state.pointer = false;
    var target = event.target;
    var key = event.key;
    if (key === "Escape") {
      if (target && target.blur && state.form.contains(target)) {
        target.blur();
        event.preventDefault();
      }
      return;
    }
    if (typing(target)) {
      return;
    }
    if (key === "Enter") {
      // Enter on a button, link or summary does what it says.
      if (!event.ctrlKey && target && target.closest && target.closest("button, a, summary")) {
        return;
      }
      event.preventDefault();
      submitAction("submit");
      return;
    }
    if (event.ctrlKey) {
      return;
    }
    if (key === "?") {
      event.preventDefault();
      toggleLegend();
      return;
    }
    var handled = false;
    if (/^[1-9]$/.test(key)) {
      handled = answer(parseInt(key, 10));
    } else if (key === "Backspace" || key === "Delete") {
      clear();
      handled = true;
    } else if (key === "n" || key === "N") {
      step(1);
      handled = true;
    } else if (key === "p" || key === "P") {
      step(-1);
      handled = true;
    } else if (key.length === 1) {
      handled = jump(key.toLowerCase());
    }
    if (handled) {
      event.preventDefault();
    }
  }

  // onSubmit adds the time spent, and checks what the server would refuse
  // before leaving the page: every question answered for submit, a reason
  // for skip and flag.
  function onSubmit(event) {
    var form = event.target;
    if (!state || form !== state.form) {
      return;
    }
    var action = event.submitter ? event.submitter.value : "save";
    if (action === "save") {
      // Saving needs no new page.
      event.preventDefault();
      save();
      return;
    }
    if (action === "submit") {
      var missing = questions().filter(function (q) {
        return !answered(q);
      });
      if (missing.length > 0) {
        event.preventDefault();
        missing.forEach(function (q) {
          q.classList.add("an-invalid");
        });
        setProblem(
          "Answer every question before submitting; missing: " +
            missing
              .map(function (q) {
                return q.getAttribute("data-title");
              })
              .join(", ") +
            "."
        );
        activate(missing[0]);
        return;
      }
    }
    if (action === "skip" || action === "flag") {
      var reason = form.querySelector('textarea[name="reason"]');
      if (reason && reason.value.trim() === "") {
        event.preventDefault();
        var details = reason.closest("details");
        if (details) {
          details.open = true;
        }
        setProblem("Say why you " + (action === "skip" ? "skip" : "flag") + " this item in the reason box.");
        reason.focus();
        return;
      }
    }
    setProblem("");
    form.querySelector("[data-time-spent]").value = String(state.clock.take());
    state.submitting = true;
  }

  function onChange(event) {
    if (!state || !state.form.contains(event.target)) {
      return;
    }
    var t = event.target;
    if (t.type === "radio") {
      delete state.cleared[t.name];
      var q = t.closest("fieldset[data-question]");
      q.classList.remove("an-invalid");
      activate(q, { noScroll: true });
      // A click leaves the radio button focused, where ← → would change the
      // answer: give the arrows back to the timeline.
      if (state.pointer) {
        t.blur();
      }
    }
    save();
  }

  function onVisibility() {
    if (!live()) {
      return;
    }
    if (document.visibilityState === "visible") {
      state.clock.resume();
    } else {
      state.clock.pause();
      flush();
    }
  }

  function enhance(form) {
    if (form.hasAttribute("data-enhanced")) {
      return;
    }
    if (live() && state.form !== form) {
      flush();
    }
    form.setAttribute("data-enhanced", "");
    state = { form: form, clock: newClock(), cleared: {}, active: null, inFlight: false, again: false, submitting: false, pointer: false };
    form.querySelectorAll("[data-an-keys]").forEach(function (el) {
      el.hidden = false;
    });
    var legend = form.querySelector("[data-an-legend]");
    if (legend) {
      try {
        legend.open = window.localStorage.getItem(LEGEND_KEY) !== "closed";
        legend.addEventListener("toggle", function () {
          window.localStorage.setItem(LEGEND_KEY, legend.open ? "open" : "closed");
        });
      } catch (e) {
        // Storage may be unavailable (private mode): the list stays open.
      }
    }
    form.addEventListener("pointerdown", function () {
      state.pointer = true;
    });
    form.addEventListener("focusin", function (event) {
      var q = event.target.closest && event.target.closest("fieldset[data-question]");
      if (q) {
        activate(q, { noScroll: true });
      }
    });
    var qs = questions();
    var first = qs.filter(function (q) {
      return q.querySelector(".field-error");
    })[0];
    activate(first || qs.filter(function (q) {
      return !answered(q);
    })[0] || qs[0], { noScroll: true });
  }

  function scan(node) {
    if (!node || !node.querySelectorAll) {
      return;
    }
    if (node.matches && node.matches("form[data-annotate]")) {
      enhance(node);
    }
    node.querySelectorAll("form[data-annotate]").forEach(enhance);
  }

  window.proctorAnnotate = { scan: scan };
  document.addEventListener("keydown", onKey);
  document.addEventListener("submit", onSubmit);
  document.addEventListener("change", onChange);
  document.addEventListener("visibilitychange", onVisibility);
  window.addEventListener("pagehide", flush);
  // htmx navigations (the site's boosted links) leave the page without a
  // pagehide: send the time first.
  document.addEventListener("htmx:beforeRequest", flush);
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
