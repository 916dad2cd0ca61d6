import { startHarness } from './harness.mjs';
import { openYourModel, chooseFolder, loadIt } from './your-model-whole.browser.mjs';
const h = await startHarness();
const { page } = await openYourModel(h);
try {
  await chooseFolder(page, '/work/wt/encdec-page/tests/golden/models/marian');
  await loadIt(page);
  await page.waitForTimeout(5000);
  console.log(await page.evaluate(() => { const v = document.getElementById('ym-model-view'); return [v.dataset.state, v.dataset.panels, v.shadowRoot.querySelector('.al-error').textContent, v.shadowRoot.querySelector('.al-status').textContent, JSON.stringify(v._panels.shown.generated), v.getAttribute('text')]; }));
  console.log(page.problems());
} finally { await page.closeAll(); await h.close(); }
