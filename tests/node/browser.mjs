// Loads PAGE_URL in headless Chromium (Debian's, through playwright-core) and prints what the
// page saw (window.result) as JSON. A fresh, empty profile; nothing else is started.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const profile = mkdtempSync(join(tmpdir(), "chromium-profile-"));
// (playwright passes the empty profile as --user-data-dir itself.)
const context = await chromium.launchPersistentContext(profile, {
  headless: true,
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
  ],
});
try {
  const page = await context.newPage();
  const console_ = [];
  page.on("console", (m) => console_.push(m.text()));
  await page.goto(process.env.PAGE_URL);
  await page.waitForFunction(() => window.result !== undefined, null, { timeout: 30000 });
  const result = await page.evaluate(() => window.result);
  console.log(JSON.stringify({ ...result, console: console_ }));
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
