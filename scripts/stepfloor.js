// stepfloor.js: the floor of an episode step measured from a plain Playwright
// script in Node, with no Go client in between. BenchmarkStepOverhead
// (runner/episode/bench_test.go) starts it and alternates its steps with the
// Go floor's and Proctor's, so the three are measured under the same load.
//
// Usage: node stepfloor.js DRIVER_PACKAGE_DIR CHROMIUM_PATH ARGS_JSON
//   DRIVER_PACKAGE_DIR  the Playwright driver's package (playwright-core),
//                       $PLAYWRIGHT_DRIVER_PATH/package
//   ARGS_JSON           Chromium's command-line arguments, a JSON array
//
// It reads one JSON request a line on stdin and answers each with one JSON
// line on stdout:
//   {"op":"open","url":U}  open U in a fresh tab (1280×800), closing the last
//   {"op":"step","dy":N}   one step: move the mouse to the middle of the
//                          viewport and turn the wheel by N, then observe as
//                          Proctor does (JPEG screenshot of the viewport at
//                          quality 70, the accessibility snapshot of the body,
//                          title and URL); answers the milliseconds of each part
// Errors are answered as {"error": "..."}; EOF on stdin closes the browser.
'use strict';

const readline = require('readline');

async function main() {
  const [pkg, executablePath, argsJSON] = process.argv.slice(2);
  if (!pkg || !executablePath) {
    throw new Error('usage: node stepfloor.js DRIVER_PACKAGE_DIR CHROMIUM_PATH ARGS_JSON');
  }
  const { chromium } = require(pkg);
  const browser = await chromium.launch({ executablePath, headless: true, args: JSON.parse(argsJSON || '[]') });
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  let page = null;

  const ops = {
    async open(req) {
      if (page) await page.close();
      page = await context.newPage();
      await page.goto(req.url, { waitUntil: 'domcontentloaded' });
      return { ok: true };
    },
    async step(req) {
      const t0 = performance.now();
      await page.mouse.move(640, 400);
      await page.mouse.wheel(0, req.dy);
      const t1 = performance.now();
      await page.screenshot({ type: 'jpeg', quality: 70 });
      const t2 = performance.now();
      await page.locator('body').ariaSnapshot();
      const t3 = performance.now();
      await page.title();
      page.url();
      const t4 = performance.now();
      return { ms: t4 - t0, act: t1 - t0, shot: t2 - t1, aria: t3 - t2, meta: t4 - t3 };
    },
  };

  const lines = readline.createInterface({ input: process.stdin });
  for await (const line of lines) {
    let out;
    try {
      const req = JSON.parse(line);
      const op = ops[req.op];
      if (!op) throw new Error('unknown op ' + JSON.stringify(req.op));
      out = await op(req);
    } catch (e) {
      out = { error: String(e && e.message ? e.message : e) };
    }
    process.stdout.write(JSON.stringify(out) + '\n');
  }
  await browser.close();
}

main().catch((e) => {
  process.stderr.write(String(e && e.stack ? e.stack : e) + '\n');
  process.exit(1);
});
