// The page-side half of a WebArena program_html probe (see probes.go). It
// reads one value from a live page and returns it as a tagged string that
// decodeProbeValue reads back:
//
//   "value:<text>"  the locator returned this string
//   "json:<json>"   it returned something else (a number, a boolean, null, …)
//   "thrown:<msg>"  it threw; WebArena then reads an empty value (a wrong page)
//   "error:<msg>"   the page to read could not be opened; no verdict is possible
//
// read(document, window, location) evaluates the locator in a window; prep
// holds WebArena's preparation steps, whose failures WebArena ignores. how:
//   target    "page": this page; "reddit_post": the Postmill submission this
//             page belongs to; "latest_order": the newest order of this order
//             history page; the last two open in a new window of the context
//   patience  how long (ms) a throwing locator is retried while the page may
//             still be rendering
//   loadWait  how long (ms) a new window may take to load
async (read, prep, how) => {
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  const message = (e) => (e && e.message ? e.message : String(e));

  const readIn = async (win) => {
    for (const step of prep) {
      try {
        step(win.document, win, win.location);
      } catch (e) {
        // WebArena goes on when a preparation step fails.
      }
    }
    const until = Date.now() + how.patience;
    for (;;) {
      let value;
      try {
        value = read(win.document, win, win.location);
      } catch (e) {
        if (Date.now() >= until) return 'thrown:' + message(e);
        await sleep(100);
        continue;
      }
      if (typeof value === 'string') return 'value:' + value;
      try {
        return 'json:' + JSON.stringify(value === undefined ? null : value);
      } catch (e) {
        return 'json:' + JSON.stringify(String(value));
      }
    }
  };

  const openAndRead = async (url) => {
    let win;
    try {
      win = window.open(url, '_blank');
    } catch (e) {
      return 'error:could not open ' + url + ': ' + message(e);
    }
    if (!win) return 'error:the browser did not open ' + url;
    try {
      const until = Date.now() + how.loadWait;
      for (;;) {
        let ready = false;
        try {
          ready = win.location.href !== 'about:blank' && win.document.readyState === 'complete';
        } catch (e) {
          return 'error:' + url + ' could not be read (blocked or failed to load): ' + message(e);
        }
        if (ready) break;
        if (win.closed) return 'error:the window opened for ' + url + ' was closed';
        if (Date.now() >= until) return 'error:' + url + ' did not load within ' + how.loadWait + ' ms';
        await sleep(50);
      }
      return await readIn(win);
    } finally {
      win.close();
    }
  };

  const here = window.location.href;
  switch (how.target) {
    case 'page':
      return readIn(window);
    case 'reddit_post': {
      // WebArena's reddit_get_post_url: /f/<forum>/<id>/… becomes
      // /f/<forum>/<id>/; any other URL is read as it is.
      const url = new URL(here);
      if (url.protocol !== 'http:' && url.protocol !== 'https:') {
        return 'thrown:the last page (' + here + ') is not a web page';
      }
      const parts = url.pathname.split('/');
      let post = here;
      if (parts.length >= 4 && parts[1] === 'f') {
        post = url.origin + '/f/' + parts[2] + '/' + parts[3] + '/';
      }
      return openAndRead(post);
    }
    case 'latest_order': {
      // The customer's order history lists the newest order first.
      const link = [...document.querySelectorAll('a[href]')].find((a) => /\/sales\/order\/view\/order_id\/\d+/.test(a.href));
      if (!link) return 'thrown:the order history at ' + here + ' lists no order';
      return openAndRead(link.href);
    }
  }
  return 'error:unknown probe target ' + how.target;
}
