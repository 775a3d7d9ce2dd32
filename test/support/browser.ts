/**
 * Debian's Chromium driven by playwright-core, for end-to-end tests. Each test gets a fresh
 * context (no cookies, no storage), so sessions never leak between users or tests.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { OUTPUT_DIR } from './processes.ts';
import { toolPath } from './tools.ts';

/** Quiet, sandbox-free headless Chromium that makes no network calls of its own. */
export const CHROMIUM_FLAGS: readonly string[] = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Debian's /usr/bin/chromium (IDFORGE_CHROMIUM overrides); a missing one says how to get it. */
export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: toolPath('chromium'), headless: true, args: [...CHROMIUM_FLAGS] });
}

export async function newContext(browser: Browser): Promise<BrowserContext> {
  return browser.newContext({ viewport: { width: 1000, height: 800 } });
}

export const SCREENSHOT_DIR = join(OUTPUT_DIR, 'screenshots');

/** Full-page screenshot at test-output/screenshots/<name>.png. */
export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const path = join(SCREENSHOT_DIR, `${name.replace(/[^a-zA-Z0-9._-]+/g, '-')}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}

/** The page's visible text, for "the person sees why" checks. */
export async function visibleText(page: Page): Promise<string> {
  return page.locator('body').innerText();
}

/**
 * The JSON document the page shows. Chromium renders a JSON response as a <pre> (newer versions
 * add a pretty-print toggle around it), so read the <pre>, not the whole body.
 */
export async function jsonOf<T = Record<string, unknown>>(page: Page): Promise<T> {
  return JSON.parse((await page.locator('pre').first().textContent()) ?? '') as T;
}
