import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page, type Response } from 'playwright-core';

/** Debian's Chromium (`apt-get install chromium`); Playwright never downloads a browser here. */
export const CHROMIUM_PATH = '/usr/bin/chromium';

/**
 * Whether the browser suite runs: with Chromium installed, yes; without it, it is skipped — unless `CI=true`, where
 * a missing browser must fail the run (the same policy as MariaDB in `test/support/global-setup.ts`).
 */
export function browserSuiteMode(): 'run' | 'skip' | 'fail' {
  if (existsSync(CHROMIUM_PATH)) return 'run';
  return process.env.CI === 'true' ? 'fail' : 'skip';
}

/**
 * Flags that work on these machines (shared machine notes, node-svc): headless, no sandbox (root), no GPU, and no
 * background networking — the network is closed, and Chromium's own calls home would fail and log.
 */
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** One API response the page received, with the token it was sent with. */
export interface RecordedResponse {
  readonly url: string;
  readonly status: number;
  readonly authorization: string | undefined;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/** A page under watch: every console error, page error and failed request, and every `/api/` response. */
export interface WatchedPage {
  readonly browser: Browser;
  readonly page: Page;
  /** Console messages of type error, uncaught exceptions and failed requests, as text. */
  readonly errors: string[];
  /** Waits for every response body still being read, then returns all recorded `/api/` responses. */
  responses(): Promise<readonly RecordedResponse[]>;
  close(): Promise<void>;
}

/** Launches Debian's Chromium with {@link CHROMIUM_ARGS} and opens one watched page (1280 × 860). */
export async function openWatchedPage(): Promise<WatchedPage> {
  const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS });
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  const page = await context.newPage();
  page.setDefaultTimeout(20_000);
  const errors: string[] = [];
  const pending: Array<Promise<RecordedResponse | undefined>> = [];
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(`console.error: ${message.text()} (${message.location().url})`);
  });
  page.on('pageerror', (error) => errors.push(`pageerror: ${error.message}`));
  page.on('requestfailed', (request) => errors.push(`request failed: ${request.method()} ${request.url()} ${request.failure()?.errorText ?? ''}`));
  page.on('response', (response: Response) => {
    if (!new URL(response.url()).pathname.startsWith('/api/')) return;
    pending.push(
      response.text().then(
        (body) => ({
          url: response.url(),
          status: response.status(),
          authorization: response.request().headers().authorization,
          headers: response.headers(),
          body,
        }),
        () => undefined,
      ),
    );
  });
  return {
    browser,
    page,
    errors,
    responses: async () => (await Promise.all(pending)).filter((r): r is RecordedResponse => r !== undefined),
    close: () => browser.close(),
  };
}
