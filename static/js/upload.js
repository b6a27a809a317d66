// Upload form, progressive enhancement only: without this file the form posts
// the whole bundle in one request. With it, the bundle goes up in parts
// through the API with a progress bar, an interrupted upload resumes when the
// same file is chosen again (the parts the server already holds are skipped),
// and the page then opens the submission. The subset list shows only the
// chosen benchmark's subsets.
(function () {
  "use strict";

  // The page may be swapped in by htmx more than once; listeners are
  // installed once and every new form is enhanced by scan.
  if (window.proctorUpload) {
    window.proctorUpload.scan(document);
    return;
  }

  var apiBase = "/api/v1/submissions";

  function csrfToken() {
    var meta = document.querySelector('meta[name="csrf-token"]');
    return meta ? meta.getAttribute("content") : "";
  }

  // field reads a submission's property under its JSON name, whichever
  // spelling the server uses (snake_case or the Go field name).
  function field(sub, snake, goName) {
    if (sub[snake] !== undefined) {
      return sub[snake];
    }
    return sub[goName];
  }

  // apiError turns an API error answer into an Error carrying its message
  // and the offending field.
  function apiError(status, body) {
    var e = body && body.error;
    var err = new Error(e && e.message ? e.message : "The server answered " + status + ".");
    err.field = e && e.field;
    err.status = status;
    return err;
  }

  function api(method, path, body) {
    var init = {
      method: method,
      credentials: "same-origin",
      headers: { "X-CSRF-Token": csrfToken(), Accept: "application/json" },
    };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    return fetch(path, init).then(function (res) {
      return res.text().then(function (text) {
        var data = null;
        try {
          data = text ? JSON.parse(text) : null;
        } catch (ignored) {
          data = null;
        }
        if (!res.ok) {
          throw apiError(res.status, data);
        }
        return data;
      });
    });
  }

  // putPart sends one part with XMLHttpRequest, whose upload events give the
  // progress that fetch does not.
  function putPart(id, n, blob, onProgress) {
    return new Promise(function (resolve, reject) {
      var xhr = new XMLHttpRequest();
      xhr.open("PUT", apiBase + "/" + id + "/parts/" + n);
      xhr.setRequestHeader("X-CSRF-Token", csrfToken());
      xhr.setRequestHeader("Accept", "application/json");
      xhr.upload.addEventListener("progress", function (event) {
        onProgress(event.loaded);
      });
      xhr.addEventListener("load", function () {
        var data = null;
        try {
          data = JSON.parse(xhr.responseText);
        } catch (ignored) {
          data = null;
        }
        if (xhr.status >= 200 && xhr.status < 300) {
          resolve(data);
        } else {
          reject(apiError(xhr.status, data));
        }
      });
      xhr.addEventListener("error", function () {
        reject(new Error("The connection was lost while part " + n + " was uploading. Upload the same file again to resume where it stopped."));
      });
      xhr.send(blob);
    });
  }

  function formatBytes(n) {
    var units = ["B", "KiB", "MiB", "GiB", "TiB"];
    var i = 0;
    while (n >= 1024 && i < units.length - 1) {
      n /= 1024;
      i++;
    }
    return (i === 0 ? String(n) : n.toFixed(1)) + " " + units[i];
  }

  // resumeKey names an upload in this browser: the same choices and the same
  // file (name, size, modification time) resume it.
  function resumeKey(values, file) {
    return "proctor.upload:" + [values.agent, values.benchmark, values.subset, file.name, file.size, file.lastModified].join("|");
  }

  function remember(key, value) {
    try {
      if (value === null) {
        window.localStorage.removeItem(key);
      } else {
        window.localStorage.setItem(key, value);
      }
    } catch (ignored) {
      // Private windows may refuse storage: uploads then restart from scratch.
    }
  }

  function recall(key) {
    try {
      return window.localStorage.getItem(key);
    } catch (ignored) {
      return null;
    }
  }

  function showError(form, message) {
    var box = form.querySelector("[data-upload-error]");
    box.textContent = message;
    box.hidden = false;
    box.setAttribute("tabindex", "-1");
    box.focus();
  }

  function clearError(form) {
    var box = form.querySelector("[data-upload-error]");
    box.hidden = true;
    box.textContent = "";
    form.querySelectorAll("[aria-invalid]").forEach(function (el) {
      el.removeAttribute("aria-invalid");
    });
  }

  function markInvalid(form, name) {
    var map = { filename: "bundle", size: "bundle", sha256: "bundle", team: "agent" };
    var input = form.elements[map[name] || name];
    if (input && input.setAttribute) {
      input.setAttribute("aria-invalid", "true");
    }
  }

  function setProgress(form, done, total, text) {
    var box = form.querySelector("[data-upload-progress]");
    box.hidden = false;
    var bar = box.querySelector("progress");
    bar.max = Math.max(total, 1);
    bar.value = done;
    box.querySelector("[data-upload-status]").textContent = text;
  }

  // upload creates (or resumes) the submission, sends the parts the server
  // lacks and completes the upload; it resolves with the submission's id.
  function upload(form) {
    var file = form.elements.bundle.files[0];
    var values = {
      agent: form.elements.agent.value,
      benchmark: form.elements.benchmark.value,
      subset: form.elements.subset.value,
    };
    if (!file) {
      markInvalid(form, "bundle");
      return Promise.reject(new Error("Choose the bundle file to upload (.zip, .tar.gz or .tgz)."));
    }
    var key = resumeKey(values, file);
    var request = { agent: values.agent, benchmark: values.benchmark, subset: values.subset, filename: file.name, size: file.size };
    setProgress(form, 0, file.size, "starting…");
    return api("POST", apiBase, request).then(function (created) {
      var sub = created.submission;
      var id = field(sub, "id", "ID");
      var size = field(sub, "size", "Size");
      var partSize = field(sub, "part_size", "PartSize");
      var parts = Math.ceil(size / partSize);
      // Only an upload this browser started from this very file is resumed
      // part by part; any other match is sent again whole.
      var have = {};
      if (created.resumed && recall(key) === String(id)) {
        (sub.parts || []).forEach(function (p) {
          have[p.number] = p.size;
        });
      }
      remember(key, String(id));
      var done = 0;
      var n = 0;
      function next() {
        n++;
        if (n > parts) {
          return Promise.resolve();
        }
        var start = (n - 1) * partSize;
        var end = Math.min(start + partSize, size);
        if (have[n] === end - start) {
          done += end - start;
          setProgress(form, done, size, formatBytes(done) + " of " + formatBytes(size) + " (part " + n + " of " + parts + " was already uploaded)");
          return next();
        }
        return putPart(id, n, file.slice(start, end), function (loaded) {
          var now = done + Math.min(loaded, end - start);
          setProgress(form, now, size, formatBytes(now) + " of " + formatBytes(size) + " (part " + n + " of " + parts + ")");
        }).then(function () {
          done += end - start;
          return next();
        });
      }
      return next()
        .then(function () {
          setProgress(form, size, size, "assembling the bundle…");
          return api("POST", apiBase + "/" + id + "/complete");
        })
        .then(function () {
          remember(key, null);
          return id;
        });
    });
  }

  // filterSubsets shows the full set and the chosen benchmark's subsets only.
  function filterSubsets(form) {
    var bench = form.elements.benchmark.value;
    var select = form.elements.subset;
    select.querySelectorAll("optgroup[data-benchmark]").forEach(function (group) {
      var mine = !bench || group.getAttribute("data-benchmark") === bench;
      group.hidden = !mine;
      group.disabled = !mine;
    });
    var chosen = select.options[select.selectedIndex];
    if (chosen && chosen.parentElement.disabled) {
      select.value = "full";
    }
  }

  function enhance(form) {
    if (form.hasAttribute("data-enhanced")) {
      return;
    }
    form.setAttribute("data-enhanced", "");
    var busy = false;
    filterSubsets(form);
    form.elements.benchmark.addEventListener("change", function () {
      filterSubsets(form);
    });
    window.addEventListener("beforeunload", function (event) {
      if (busy && document.body.contains(form)) {
        event.preventDefault();
        event.returnValue = "";
      }
    });
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      if (busy) {
        return;
      }
      busy = true;
      clearError(form);
      var button = form.querySelector('button[type="submit"]');
      button.disabled = true;
      button.setAttribute("aria-busy", "true");
      upload(form).then(
        function (id) {
          busy = false;
          window.location.assign("/submissions/" + id + "?notice=uploaded");
        },
        function (err) {
          busy = false;
          button.disabled = false;
          button.removeAttribute("aria-busy");
          form.querySelector("[data-upload-progress]").hidden = true;
          if (err.field) {
            markInvalid(form, err.field);
          }
          showError(form, err.message);
        }
      );
    });
  }

  function scan(root) {
    root.querySelectorAll("form[data-upload-form]").forEach(enhance);
  }

  window.proctorUpload = { scan: scan };
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
