// The default theme, plus the attention-lab elements registered in the
// browser only: enhanceApp also runs during the server-side render, where
// there is no customElements (defineAll() would be a no-op there anyway, but
// the dynamic import keeps the components out of the server bundle).
import DefaultTheme from 'vitepress/theme';
import './custom.css';

export default {
  extends: DefaultTheme,
  enhanceApp() {
    if (!import.meta.env.SSR) {
      import('attention-lab/components').then(({ defineAll }) => defineAll());
    }
  },
};
