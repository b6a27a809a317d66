// axtree.js: the accessibility text of the page, one element a line, with
// stable element ids. Evaluated by page.Evaluate with {next, maxLines}; returns
// {text, next}. An element keeps its data-proctor-id attribute for as long as it
// stays in the DOM, so its id is the same at every step; new elements get ids
// from a counter kept on window and seeded by the episode (ids never repeat
// within an episode, even across pages and tabs).
(opts) => {
  const ATTR = 'data-proctor-id';
  const maxLines = opts.maxLines || 2000;
  const maxIndent = 6;
  const maxName = 150;
  const maxLoose = 2000;
  let next = Math.max(window.__proctorNextId || 1, opts.next || 1);

  const SKIP = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'HEAD', 'META', 'LINK',
    'IFRAME', 'OBJECT', 'EMBED', 'svg', 'SVG', 'CANVAS', 'VIDEO', 'AUDIO', 'OPTION', 'OPTGROUP', 'DATALIST']);
  // Content roles are named by their own text (text not inside a listed child);
  // every other role is named like a control.
  const CONTENT = new Set(['paragraph', 'listitem', 'cell', 'columnheader', 'rowheader', 'label',
    'text', 'term', 'definition', 'row', 'table', 'list', 'generic', 'group', 'region', 'article']);
  const TEXT_INPUTS = new Set(['text', 'search', 'email', 'url', 'tel', 'number', 'password',
    'date', 'datetime-local', 'month', 'week', 'time', '']);

  const collapse = (s) => (s || '').replace(/\s+/g, ' ').trim();
  const clip = (s, n) => (s.length > n ? s.slice(0, n - 1) + '…' : s);

  function inputRole(el) {
    const t = (el.getAttribute('type') || 'text').toLowerCase();
    if (t === 'hidden') return null;
    if (TEXT_INPUTS.has(t)) return t === 'search' ? 'searchbox' : (t === 'number' ? 'spinbutton' : 'textbox');
    if (t === 'checkbox') return 'checkbox';
    if (t === 'radio') return 'radio';
    if (t === 'range') return 'slider';
    if (t === 'file') return 'button';
    if (t === 'submit' || t === 'button' || t === 'reset' || t === 'image') return 'button';
    return 'textbox';
  }

  function classify(el) {
    const explicit = (el.getAttribute('role') || '').trim().split(/\s+/)[0];
    if (explicit === 'presentation' || explicit === 'none') return null;
    if (explicit) return explicit;
    switch (el.tagName) {
      case 'A': return el.hasAttribute('href') ? 'link' : null;
      case 'BUTTON': case 'SUMMARY': return 'button';
      case 'INPUT': return inputRole(el);
      case 'SELECT': return el.multiple || el.size > 1 ? 'listbox' : 'combobox';
      case 'TEXTAREA': return 'textbox';
      case 'H1': case 'H2': case 'H3': case 'H4': case 'H5': case 'H6': return 'heading';
      case 'IMG': return collapse(el.getAttribute('alt')) ? 'img' : null;
      case 'TABLE': return 'table';
      case 'TR': return 'row';
      case 'TD': return 'cell';
      case 'TH': return el.getAttribute('scope') === 'row' ? 'rowheader' : 'columnheader';
      case 'LI': return 'listitem';
      case 'LABEL': return 'label';
      case 'P': return 'paragraph';
      case 'DT': return 'term';
      case 'DD': return 'definition';
    }
    if (el.isContentEditable && el.hasAttribute('contenteditable')) return 'textbox';
    if (el.hasAttribute('onclick') || (el.hasAttribute('tabindex') && el.tabIndex >= 0)) return 'clickable';
    return null;
  }

  function textOfIds(ids) {
    return collapse(ids.split(/\s+/).map((id) => {
      const t = document.getElementById(id);
      return t ? t.innerText || t.textContent : '';
    }).join(' '));
  }

  function controlName(el) {
    const aria = collapse(el.getAttribute('aria-label'));
    if (aria) return aria;
    const by = el.getAttribute('aria-labelledby');
    if (by) {
      const t = textOfIds(by);
      if (t) return t;
    }
    const tag = el.tagName;
    if (tag === 'INPUT' || tag === 'SELECT' || tag === 'TEXTAREA') {
      if (el.labels && el.labels.length) {
        const t = collapse(el.labels[0].innerText);
        if (t) return t;
      }
      if (tag === 'INPUT' && ['submit', 'button', 'reset'].includes(el.type)) return collapse(el.value) || el.type;
      return collapse(el.getAttribute('placeholder') || el.getAttribute('title') || el.getAttribute('name'));
    }
    if (tag === 'IMG') return collapse(el.getAttribute('alt'));
    let t = collapse(el.innerText);
    if (!t) {
      const img = el.querySelector('img[alt]');
      t = collapse((img && img.getAttribute('alt')) || el.getAttribute('title'));
    }
    return t;
  }

  function details(el, role) {
    const out = [];
    const tag = el.tagName;
    if (role === 'heading') {
      const lvl = /^H[1-6]$/.test(tag) ? tag[1] : el.getAttribute('aria-level');
      if (lvl) out.push({ level: lvl });
    }
    if (tag === 'A' && el.hasAttribute('href')) {
      const raw = el.getAttribute('href');
      if (!/^\s*javascript:/i.test(raw)) {
        try {
          const u = new URL(el.href);
          out.push(' -> ' + (u.origin === location.origin ? u.pathname + u.search + u.hash : u.href));
        } catch (e) { /* unparsable href: no arrow */ }
      }
    }
    if (tag === 'INPUT' || tag === 'TEXTAREA') {
      const t = (el.type || '').toLowerCase();
      if (t === 'checkbox' || t === 'radio') {
        out.push(el.checked ? ' checked' : ' unchecked');
      } else if (t === 'password') {
        if (el.value) out.push(' value="••••"');
      } else if (!['submit', 'button', 'reset', 'image', 'file'].includes(t) && el.value) {
        out.push(' value=' + JSON.stringify(clip(el.value, 200)));
      }
    }
    if (el.isContentEditable && role === 'textbox' && tag !== 'INPUT' && tag !== 'TEXTAREA') {
      const v = collapse(el.innerText);
      if (v) out.push(' value=' + JSON.stringify(clip(v, 200)));
    }
    if (tag === 'SELECT') {
      const chosen = Array.from(el.selectedOptions).map((o) => collapse(o.text));
      if (chosen.length) out.push(' value=' + JSON.stringify(chosen.join(', ')));
      const opts = Array.from(el.options).slice(0, 20).map((o) => collapse(o.text));
      out.push(' options=' + JSON.stringify(opts) + (el.options.length > 20 ? ' (+' + (el.options.length - 20) + ' more)' : ''));
    }
    for (const [attr, word] of [['aria-expanded', 'expanded'], ['aria-selected', 'selected'], ['aria-checked', 'checked'], ['aria-pressed', 'pressed']]) {
      if (el.getAttribute(attr) === 'true') out.push(' ' + word);
    }
    if (el.disabled || el.getAttribute('aria-disabled') === 'true') out.push(' disabled');
    if (el.required) out.push(' required');
    return out;
  }

  function isBlock(style) {
    const d = style.display;
    return !(d.startsWith('inline') || d === 'contents');
  }

  const entries = [];
  let kept = 0;
  let truncated = false;

  // walk visits el's subtree and returns the text not claimed by a listed
  // element below it, for the nearest listed ancestor to use as its name.
  function walk(node, parent) {
    if (node.nodeType === Node.TEXT_NODE) return node.nodeValue || '';
    if (node.nodeType !== Node.ELEMENT_NODE) return '';
    const el = node;
    if (SKIP.has(el.tagName) || truncated) return '';
    if (el.getAttribute('aria-hidden') === 'true') return '';
    if (el.tagName === 'BR') return ' ';
    const style = getComputedStyle(el);
    if (style.display === 'none') return '';
    // display: contents has no box of its own, so checkVisibility is false
    // for it even though its children render.
    if (style.display !== 'contents' && el.checkVisibility && !el.checkVisibility({ checkVisibilityCSS: true })) return '';
    const role = classify(el);
    const entry = { el, parent, role, name: '', keep: false };
    entries.push(entry);
    let loose = '';
    if (!(el.tagName === 'SELECT' || el.tagName === 'TEXTAREA')) {
      for (const child of el.childNodes) {
        const t = walk(child, entry);
        if (loose.length < maxLoose) loose += t;
      }
    }
    loose = collapse(loose);
    const block = isBlock(style);
    if (!role) {
      // Unlisted blocks that hold loose text become text lines, so prices and
      // captions in plain divs still reach the agent.
      if (block && loose && keep(entry)) {
        entry.role = 'text';
        entry.name = clip(loose, maxName);
        return ' ';
      }
      return block ? ' ' + loose + ' ' : loose;
    }
    if (CONTENT.has(role)) {
      entry.name = clip(loose, maxName);
      const structural = role === 'row' || role === 'cell' || role === 'columnheader' || role === 'rowheader' || role === 'table';
      if (role === 'table') {
        const cap = el.querySelector('caption');
        entry.name = cap ? clip(collapse(cap.innerText), maxName) : '';
      }
      if (entry.name || structural) keep(entry);
    } else {
      entry.name = clip(controlName(el), maxName);
      keep(entry);
    }
    return block ? ' ' : '';
  }

  // keep lists entry unless the line cap is reached.
  function keep(entry) {
    if (kept >= maxLines) {
      truncated = true;
      return false;
    }
    entry.keep = true;
    kept++;
    return true;
  }

  walk(document.body || document.documentElement, null);

  const listed = entries.filter((e) => e.keep);
  const ID = /^e(\d+)$/;
  // Ids already in the page (say, copied by a script from another page) must
  // never be handed out again.
  for (const e of listed) {
    const m = ID.exec(e.el.getAttribute(ATTR) || '');
    if (m) next = Math.max(next, Number(m[1]) + 1);
  }
  const used = new Set();
  const lines = [];
  for (const e of listed) {
    let id = e.el.getAttribute(ATTR);
    if (!(id && ID.test(id) && !used.has(id))) {
      id = 'e' + next++;
      e.el.setAttribute(ATTR, id);
    }
    used.add(id);
    let depth = 0;
    for (let p = e.parent; p; p = p.parent) if (p.keep) depth++;
    let line = '  '.repeat(Math.min(depth, maxIndent)) + '[' + id + '] ' + e.role;
    const extra = details(e.el, e.role);
    if (extra.length && typeof extra[0] === 'object') line += '(' + extra.shift().level + ')';
    if (e.name) line += ' ' + JSON.stringify(e.name);
    line += extra.join('');
    lines.push(line);
  }
  if (truncated) lines.push('[truncated at ' + maxLines + ' lines]');
  window.__proctorNextId = next;
  return { text: lines.join('\n'), next };
}
