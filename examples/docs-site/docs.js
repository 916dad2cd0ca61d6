// The docs page's own script: a theme switch, and attention weights "from a
// model" handed to a component as a property (works the same from React, Vue,
// Svelte…: set the property on the element).
const themeBtn = document.getElementById('theme');
themeBtn.addEventListener('click', () => {
  const dark = document.documentElement.dataset.theme !== 'dark';
  document.documentElement.dataset.theme = dark ? 'dark' : 'light';
  themeBtn.setAttribute('aria-pressed', String(dark));
  themeBtn.textContent = dark ? 'Light mode' : 'Dark mode';
});

const el = document.getElementById('own-weights');
el.queryTokens = ['le', 'chat', 'dort'];
el.keyTokens = ['the', 'cat', 'sleeps'];
// Two heads: one aligns the words, one looks at the noun.
el.attention = {
  shape: [2, 3, 3],
  data: new Float32Array([
    0.80, 0.15, 0.05,
    0.10, 0.85, 0.05,
    0.05, 0.15, 0.80,
    0.30, 0.60, 0.10,
    0.20, 0.70, 0.10,
    0.10, 0.65, 0.25,
  ]),
};
