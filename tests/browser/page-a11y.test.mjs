// Browser layer, accessibility of the page at 1280×800 with a store open (every view shown) and
// with a tensor file open: every control has a name in Chromium's own accessibility tree, text
// (HTML and the figures' SVG) meets WCAG AA contrast against what is really behind it, nothing
// scrolls sideways, Tab reaches every control in document order with a visible focus ring, and
// the choosers work from the keyboard alone (a forward chosen by arrow key redraws the gantt).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { serve, launch, openPage, shots, drawAll } from "./harness.mjs";
import { makeStores, fixtures } from "../node/store-fixture.mjs";

let server, origin, browser, s;

before(async () => {
  s = makeStores("page-a11y");
  ({ server, origin } = await serve());
  browser = await launch();
});
after(async () => {
  await browser?.close();
  server?.close();
});

const FIGURES = ["progress", "profile", "flags", "overlaid", "history", "spent", "gantt", "machines"];

/** The page with the test store open by URL, every figure drawn (each scrolled into view: the
 * page draws figures on screen only). */
async function storePage() {
  const { page, seen } = await openPage(browser, `${origin}/www/index.html?store=${encodeURIComponent(s.url("store/"))}`);
  await page.waitForFunction((figures) => document.querySelector("#error").textContent ||
    figures.every((f) => ["true", "waiting"].includes(document.querySelector(`#fig-${f}`)?.dataset.drawn)), FIGURES);
  assert.equal(await page.textContent("#error"), "");
  await drawAll(page);
  assert.deepEqual(await page.evaluate((figures) => figures.filter((f) => document.querySelector(`#fig-${f}`).dataset.drawn !== "true"), FIGURES), []);
  return { page, seen };
}

const INTERACTIVE = new Set(["button", "textbox", "combobox", "checkbox", "spinbutton", "slider",
  "radio", "listbox", "searchbox", "link", "menuitem", "switch", "tab"]);

/** Interactive nodes of Chromium's computed accessibility tree that have no name: [role, html]. */
async function unnamedControls(page) {
  const cdp = await page.context().newCDPSession(page);
  const { nodes } = await cdp.send("Accessibility.getFullAXTree");
  const unnamed = nodes.filter((n) => !n.ignored && INTERACTIVE.has(n.role?.value) && !n.name?.value?.trim());
  const out = [];
  for (const n of unnamed) {
    const { node } = await cdp.send("DOM.describeNode", { backendNodeId: n.backendDOMNodeId });
    out.push([n.role.value, `<${node.localName} ${(node.attributes ?? []).join(" ")}>`]);
  }
  await cdp.detach();
  return out;
}

/** Every visible piece of text whose contrast with what is behind it is under WCAG AA (4.5:1,
 * or 3:1 for large text): [text, ratio, colour, background]. HTML text is measured against the
 * first opaque background up its ancestors; a figure's SVG text against its bar or the paper. */
function lowContrast(page) {
  return page.evaluate(() => {
    const rgba = (c) => {
      const m = /rgba?\(([^)]+)\)/.exec(c);
      if (!m) return null;
      const [r, g, b, a = 1] = m[1].split(/[ ,/]+/).filter(Boolean).map(Number);
      return { r, g, b, a };
    };
    const lum = ({ r, g, b }) => {
      const f = (v) => ((v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
      return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
    };
    const over = (fg, bg) => ({ r: fg.r * fg.a + bg.r * (1 - fg.a), g: fg.g * fg.a + bg.g * (1 - fg.a),
      b: fg.b * fg.a + bg.b * (1 - fg.a), a: 1 });
    const background = (el) => {
      const layers = [];
      for (let e = el; e; e = e.parentElement) {
        const c = rgba(getComputedStyle(e).backgroundColor);
        if (c && c.a > 0) layers.push(c);
        if (c && c.a === 1) break;
      }
      return layers.reduceRight((bg, c) => over(c, bg), { r: 255, g: 255, b: 255, a: 1 });
    };
    const ratio = (fg, bg) => {
      const [a, b] = [lum(over(fg, bg)), lum(bg)].sort((x, y) => y - x);
      return (a + 0.05) / (b + 0.05);
    };
    const visible = (el) => {
      const r = el.getBoundingClientRect();
      const st = getComputedStyle(el);
      return r.width > 0 && r.height > 0 && st.visibility !== "hidden" && Number(st.opacity) > 0;
    };
    const bad = [];
    const check = (el, text, fg, bg, size, weight) => {
      const large = size >= 24 || (size >= 18.66 && weight >= 700);
      const got = ratio(fg, bg);
      if (got < (large ? 3 : 4.5)) bad.push([text.slice(0, 40), Math.round(got * 100) / 100, fg, bg]);
    };
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let t = walker.nextNode(); t; t = walker.nextNode()) {
      const el = t.parentElement;
      if (!t.textContent.trim() || !el || el.closest("svg, [hidden], script, style, option") || !visible(el)) continue;
      const st = getComputedStyle(el);
      check(el, t.textContent.trim(), rgba(st.color), background(el), parseFloat(st.fontSize), Number(st.fontWeight));
    }
    for (const gd of document.querySelectorAll(".js-plotly-plot")) {
      const page = background(gd);
      const paper = over(rgba(gd._fullLayout.paper_bgcolor) ?? page, page);
      for (const el of gd.querySelectorAll("text")) {
        if (!el.textContent.trim() || !visible(el)) continue;
        const st = getComputedStyle(el);
        const fill = rgba(st.fill);
        if (!fill) continue;
        fill.a *= Number(st.fillOpacity ?? 1);
        // Text drawn inside its bar sits on the bar; any other text on the paper.
        const bar = el.closest("g.point")?.querySelector("path");
        const [t, b] = [el.getBoundingClientRect(), bar?.getBoundingClientRect()];
        const inside = b && t.left + t.width / 2 > b.left && t.left + t.width / 2 < b.right &&
          t.top + t.height / 2 > b.top && t.top + t.height / 2 < b.bottom;
        const under = inside ? over({ ...rgba(getComputedStyle(bar).fill), a: Number(getComputedStyle(bar).fillOpacity ?? 1) }, paper) : paper;
        check(el, el.textContent.trim(), fill, under, parseFloat(st.fontSize), Number(st.fontWeight));
      }
    }
    return bad;
  });
}

/** What sticks out of a 1280-pixel-wide window. */
const overflow = (page) => page.evaluate(() => ({
  scrollWidth: document.documentElement.scrollWidth,
  outside: [...document.querySelectorAll("input, select, button, textarea, table, .figure")]
    .filter((el) => el.getBoundingClientRect().width > 0 && el.getBoundingClientRect().right > innerWidth + 0.5)
    .map((el) => el.id || el.tagName),
}));

/** The controls a keyboard user should reach, in document order (visible and enabled). */
const controls = (page) => page.evaluate(() => [...document.querySelectorAll("input, select, button, textarea, a[href]")]
  .filter((el) => !el.disabled && el.getBoundingClientRect().width > 0 && !el.closest("[hidden], .modebar"))
  .map((el) => el.id || `${el.tagName}:${el.textContent.trim()}`));

/** Press Tab until focus leaves the page or comes back round; each element focused, with whether
 * a focus ring shows (an outline or a box shadow). */
async function tabOrder(page, most) {
  await page.evaluate(() => document.activeElement?.blur());
  const order = [];
  for (let i = 0; i < most; i++) {
    await page.keyboard.press("Tab");
    const at = await page.evaluate(() => {
      const el = document.activeElement;
      if (!el || el === document.body || el.dataset.tabbed) return null;
      el.dataset.tabbed = "1";
      const st = getComputedStyle(el);
      return { id: el.id || `${el.tagName}:${el.textContent.trim() || el.getAttribute("data-title") || el.className?.baseVal || el.className}`,
        ring: (st.outlineStyle !== "none" && parseFloat(st.outlineWidth) > 0) || st.boxShadow !== "none" };
    });
    if (!at) break;
    order.push(at);
  }
  return order;
}

test("a store's page: named controls, AA contrast, no sideways scroll at 1280x800, every control by Tab", async () => {
  const { page } = await storePage();
  assert.deepEqual(page.viewportSize(), { width: 1280, height: 800 });
  assert.deepEqual(await unnamedControls(page), [], "controls without an accessible name");
  assert.deepEqual(await lowContrast(page), [], "text under WCAG AA contrast");
  const o = await overflow(page);
  assert.ok(o.scrollWidth <= 1280, `the page is ${o.scrollWidth} px wide`);
  assert.deepEqual(o.outside, [], "elements past the right edge");
  const want = await controls(page);
  const got = await tabOrder(page, want.length + 200); // each figure's modebar adds its buttons
  const reached = got.map((g) => g.id).filter((id) => want.includes(id));
  assert.deepEqual(reached, want, "Tab reaches every control, in document order");
  assert.deepEqual(got.filter((g) => !g.ring).map((g) => g.id), [], "focused with no focus ring");
  await page.screenshot({ path: join(shots, "a11y-store-1280x800.png") });
  await page.close();
});

test("a forward, a node and a measurement are chosen from the keyboard alone", async () => {
  const { page } = await storePage();
  const drawnFor = (id) => page.evaluate((id) => {
    const gd = document.getElementById(id);
    return JSON.stringify([gd.data.map((t) => [t.x, t.y]), gd.layout.title]);
  }, id);
  for (const [select, figure] of [["#forward", "fig-gantt"], ["#history-node", "fig-history"], ["#measure", "fig-profile"]]) {
    const options = await page.locator(`${select} option`).count();
    assert.ok(options > 1, `${select} offers ${options} choices`);
    const before = [await page.inputValue(select), await drawnFor(figure)];
    await page.focus(select);
    await page.keyboard.press(before[0] === (await page.locator(`${select} option`).first().getAttribute("value")) ? "ArrowDown" : "ArrowUp");
    await page.waitForFunction(([sel, was]) => document.querySelector(sel).value !== was, [select, before[0]]);
    // Scrolled to at once: playwright's scrollIntoViewIfNeeded waits for the element to stop
    // moving, which a page still laying out other figures under a loaded machine may not do in 30 s.
    await page.$eval(`#${figure}`, (el) => el.scrollIntoView({ block: "center" }));
    // Drawn again: a figure other than the one before, fully drawn.
    await page.waitForFunction(([id, was]) => {
      const gd = document.getElementById(id);
      return gd.dataset.drawn === "true" && JSON.stringify([gd.data.map((t) => [t.x, t.y]), gd.layout.title]) !== was;
    }, [figure, before[1]], { timeout: 10_000 }).catch(() => {});
    const after = [await page.inputValue(select), await drawnFor(figure)];
    assert.notEqual(after[0], before[0], `${select}: the arrow key chose another`);
    assert.notEqual(after[1], before[1], `${figure} redrawn for ${select} = ${after[0]}`);
  }
  await page.close();
});

test("a tensor file's page: named controls, AA contrast, no sideways scroll", async () => {
  const { page } = await openPage(browser, `${origin}/www/index.html`);
  await page.waitForSelector("body[data-ready=true]");
  await page.setInputFiles("#pick-file", join(fixtures, "nested_checkpoint.pt"));
  await page.waitForFunction(() => document.querySelector("#error").textContent ||
    document.querySelectorAll("#stats-table tbody tr").length > 0);
  assert.equal(await page.textContent("#error"), "");
  assert.deepEqual(await unnamedControls(page), []);
  assert.deepEqual(await lowContrast(page), []);
  const o = await overflow(page);
  assert.ok(o.scrollWidth <= 1280, `the page is ${o.scrollWidth} px wide`);
  assert.deepEqual(o.outside, []);
  await page.screenshot({ path: join(shots, "a11y-file-1280x800.png") });
  await page.close();
});
