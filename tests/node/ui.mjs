// Drives the operator view (/ui/) in headless Chromium (Debian's, through playwright-core):
// opens the list, opens the response awaiting approval, approves it from the page, follows the
// continuation's timeline live until it completes, and saves screenshots of both pages.
// Prints what it saw as JSON on its last line.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const { SERVER, RID, SHOTS } = process.env;
const profile = mkdtempSync(join(tmpdir(), "chromium-profile-"));
const context = await chromium.launchPersistentContext(profile, {
  headless: true,
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  viewport: { width: 1280, height: 900 },
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync"],
});
const result = { console: [] };
try {
  const page = await context.newPage();
  page.on("console", (m) => result.console.push(m.text()));
  page.on("pageerror", (e) => result.console.push(`pageerror: ${e.message}`));
  await page.goto(`${SERVER}/ui/`);
  await page.waitForSelector(`tr[data-id="${RID}"]`, { timeout: 30000 });
  result.listed = await page.locator("#list tbody tr").count();
  await page.screenshot({ path: join(SHOTS, "ui-list.png") });
  await page.click(`a[href="#/responses/${RID}"]`);
  await page.waitForSelector('button[data-approve="true"]', { timeout: 30000 });
  result.awaiting = await page.locator("#pending .card").innerText();
  await page.click('button[data-approve="true"]');
  await page.waitForFunction((rid) => location.hash.startsWith("#/responses/") && !location.hash.includes(rid), RID, { timeout: 30000 });
  result.next = decodeURIComponent(await page.evaluate(() => location.hash.split("/")[2]));
  await page.waitForSelector("#event-count", { timeout: 30000 });
  // Watch the timeline while the continuation runs: its events arrive as they commit.
  result.samples = [];
  const deadline = Date.now() + 60000;
  for (;;) {
    const sample = await page.evaluate(() => ({
      status: document.querySelector("#status")?.innerText.trim(),
      events: Number(document.querySelector("#event-count")?.dataset.n || 0),
    }));
    result.samples.push(sample);
    if (sample.status === "completed" || Date.now() > deadline) break;
    await page.waitForTimeout(100);
  }
  await page.waitForSelector("#final-output", { timeout: 30000 });
  result.final = await page.locator("#final-output").innerText();
  result.supersteps = await page.locator("#supersteps").innerText();
  await page.screenshot({ path: join(SHOTS, "ui-response.png"), fullPage: true });
} catch (err) {
  result.error = String(err);
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
console.log(JSON.stringify(result));
