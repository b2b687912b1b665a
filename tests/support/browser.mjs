// Headless Chromium (Debian's package, driven by the dashboard's playwright-core) for the Node
// tests that open the dashboard.
import { createRequire } from 'node:module';
import path from 'node:path';

export async function launchChromium() {
  const require = createRequire(path.join(process.env.PERFSCOPE_WEB_DIR, 'package.json'));
  const { chromium } = require('playwright-core');
  return chromium.launch({
    executablePath: process.env.PERFSCOPE_CHROMIUM || '/usr/bin/chromium', headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
}
